"""Which rank goes where, given switch groups.

HPL broadcasts every factored panel along its process row, so a process row
that spans two switches pushes each panel through a trunk. I-Cluster put each
row on one switch and went from 71.8 to 76.4 GFLOPS on 210 nodes and five
switches (Richard et al., "I-Cluster"). `hpl_placement` packs whole process rows into switches.

Collectives on multi-core nodes depend on rank order too: Helix's Allreduce
slowed past 64 processes with the order 1..64,1..64 and recovered with
1..64,64..1 (Barczak, Messom and Johnson, the Helix paper). `collective_order` gives the block, cyclic and
serpentine orders.

Pure functions; `rankfile_text` renders Open MPI's rankfile."""

from __future__ import annotations

from dataclasses import dataclass, field

from rmax.errors import RmaxError
from rmax.launch.hosts import Host


@dataclass(frozen=True)
class Slot:
    host: str
    index: int        # the index-th slot on its host


@dataclass
class Placement:
    ranks: list[Slot]                 # ranks[r] = where rank r runs
    rows: list[list[int]]             # HPL process rows: the ranks of each
    split_rows: int                   # rows that span more than one switch
    switch_of: dict[str, int] = field(default_factory=dict)
    note: str = ""

    def row_switches(self) -> list[list[int]]:
        return [sorted({self.switch_of[self.ranks[r].host] for r in row}) for row in self.rows]

    def to_dict(self) -> dict:
        return {"ranks": [[s.host, s.index] for s in self.ranks], "rows": self.rows,
                "split_rows": self.split_rows, "row_switches": self.row_switches(), "note": self.note}


def _switch_map(groups: list[list[str]], hosts: list[Host]) -> tuple[list[list[Host]], dict[str, int]]:
    """The job's hosts per switch (group order, then host order); hosts no group names form their own."""
    by_name = {h.name: h for h in hosts}
    switch_of: dict[str, int] = {}
    out: list[list[Host]] = []
    for g in groups:
        members = [by_name[n] for n in g if n in by_name]
        if members:
            for h in members:
                switch_of[h.name] = len(out)
            out.append(members)
    for h in hosts:
        if h.name not in switch_of:
            switch_of[h.name] = len(out)
            out.append([h])
    return out, switch_of


def rank_of(row: int, col: int, p: int, q: int, pmap: int) -> int:
    """HPL's mapping of grid position to rank: 0 row-major (r*Q + c), 1 column-major (c*P + r)."""
    return row * q + col if pmap == 0 else col * p + row


def _rows_of(ranks: list[Slot], p: int, q: int, pmap: int) -> list[list[int]]:
    return [[rank_of(r, c, p, q, pmap) for c in range(q)] for r in range(p)]


def _finish(ranks: list[Slot], p: int, q: int, pmap: int, switch_of: dict[str, int], note: str) -> Placement:
    rows = _rows_of(ranks, p, q, pmap)
    split = sum(len({switch_of[ranks[r].host] for r in row}) > 1 for row in rows)
    return Placement(ranks, rows, split, switch_of, note)


def natural_placement(groups: list[list[str]], hosts: list[Host], p: int, q: int, pmap: int = 0) -> Placement:
    """mpirun's default: ranks fill each host's slots in hostfile order."""
    _, switch_of = _switch_map(groups, hosts)
    slots = [Slot(h.name, k) for h in hosts for k in range(h.slots)]
    if len(slots) < p * q:
        raise RmaxError(f"a {p} x {q} grid needs {p * q} slots but the hosts offer {len(slots)}")
    return _finish(slots[:p * q], p, q, pmap, switch_of, "hostfile order")


def heavier_dimension(p: int, q: int) -> str:
    """Which HPL grid lines carry more traffic, by HPL's own scalability model: per
    process, panel broadcasts along a row move about N^2/(2P) words, while row swaps
    and U broadcasts along a column move about 3 N^2/(2Q) and the pivot searches add
    latency-bound messages there too. So rows are heavier only on flat grids, Q > 3P
    (I-Cluster's 210 nodes ran such grids, and rows in a switch won there, Richard et al.);
    on square grids columns are (measured on a 2 x 2 virtual cluster: 2.4 s with
    columns inside switches against 6.0 s with rows, docs/VCLUSTER.md)."""
    return "rows" if q > 3 * p else "columns"


def hpl_placement(groups: list[list[str]], hosts: list[Host], p: int, q: int, pmap: int = 0,
                  keep: str = "rows") -> Placement:
    """Ranks for a P x Q grid with as many process rows (or columns) as possible inside one switch.

    Whole lines go to switches first (each switch takes as many lines as it has free
    slots for); the lines left over fill the remaining slots and span switches.
    keep="rows" is I-Cluster's recipe (Richard et al.) (panel broadcasts stay in a switch); "columns"
    keeps pivoting, row swaps and U broadcasts in a switch instead; "auto" picks
    the heavier of the two by HPL's model (heavier_dimension)."""
    if p < 1 or q < 1:
        raise RmaxError(f"grid {p} x {q} needs positive P and Q")
    if keep == "auto":
        keep = heavier_dimension(p, q)
    if keep not in ("rows", "columns"):
        raise RmaxError(f"keep must be rows or columns, not '{keep}'")
    per_switch, switch_of = _switch_map(groups, hosts)
    free = [[Slot(h.name, k) for h in sw for k in range(h.slots)] for sw in per_switch]
    total = sum(len(f) for f in free)
    if total < p * q:
        raise RmaxError(f"a {p} x {q} grid needs {p * q} slots but the hosts offer {total}")
    count, size = (p, q) if keep == "rows" else (q, p)
    lines: list[list[Slot]] = []
    for f in free:                          # whole lines inside one switch
        while len(lines) < count and len(f) >= size:
            lines.append(f[:size])
            del f[:size]
    leftovers = [s for f in free for s in f]
    while len(lines) < count:               # what does not fit spans switches
        lines.append(leftovers[:size])
        del leftovers[:size]
    ranks: list[Slot | None] = [None] * (p * q)
    for a, line in enumerate(lines):
        for b, s in enumerate(line):
            ranks[rank_of(a, b, p, q, pmap) if keep == "rows" else rank_of(b, a, p, q, pmap)] = s
    placed = _finish(ranks, p, q, pmap, switch_of, "")
    split_lines = placed.split_rows if keep == "rows" else split_columns(placed, p, q, pmap)
    what = "process rows" if keep == "rows" else "process columns"
    placed.note = (f"{count - split_lines} of {count} {what} inside one switch" +
                   ("" if not split_lines else f"; {split_lines} span switches (no switch has {size} free slots left)"))
    return placed


def split_columns(placed: Placement, p: int, q: int, pmap: int) -> int:
    """How many process columns of the grid span more than one switch."""
    cols = [[rank_of(r, c, p, q, pmap) for r in range(p)] for c in range(q)]
    return sum(len({placed.switch_of[placed.ranks[r].host] for r in col}) > 1 for col in cols)


def collective_order(groups: list[list[str]], hosts: list[Host], style: str = "block") -> list[Slot]:
    """Rank order for collectives on multi-core nodes, switch by switch.

    block: a node's slots consecutive (neighbouring ranks share a node, then a switch);
    cyclic: one slot per node in turn (Helix's 1..64,1..64); serpentine: cyclic,
    with every other pass reversed (Helix's 1..64,64..1)."""
    per_switch, _ = _switch_map(groups, hosts)
    ordered = [h for sw in per_switch for h in sw]
    if style == "block":
        return [Slot(h.name, k) for h in ordered for k in range(h.slots)]
    if style not in ("cyclic", "serpentine"):
        raise RmaxError(f"rank order '{style}' is not one of block, cyclic, serpentine")
    out, rnd = [], 0
    while len(out) < sum(h.slots for h in ordered):
        seq = ordered if style == "cyclic" or rnd % 2 == 0 else list(reversed(ordered))
        out += [Slot(h.name, rnd) for h in seq if rnd < h.slots]
        rnd += 1
    return out


def rankfile_text(ranks: list[Slot], cpus: str | None = None) -> str:
    """Open MPI rankfile. Each rank gets its slot's core, or `cpus` (e.g. '0-1') for all
    ranks where nodes share cores, as the nodes of a virtual cluster do."""
    return "".join(f"rank {r}={s.host} slot={cpus if cpus else s.index}\n" for r, s in enumerate(ranks))
