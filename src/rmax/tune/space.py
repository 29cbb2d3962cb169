"""The search space: which values each HPL parameter may take, and how a
candidate (one value per parameter) becomes a one-test HplConfig.

A candidate is a plain dict with the keys in PARAMS plus `n`. N is not searched
like the others: it follows from memory (8 N^2 bytes within a fraction of the
ranks' memory) and is the same for every candidate of one level (reduced or
full), so that two configurations are always compared at the same N: a rate
difference between NBs run at different N would be partly an N effect. It is
rounded down to a multiple of the lcm of every grid's P and Q, so every grid
deals the matrix evenly; an NB that does not divide N leaves a partial last
block, which HPL handles and which costs little at a tuning-sized N.
`Space.sized` applies the rule."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

from rmax.hpl.dat import HplConfig

# Searched parameters, in the order coordinate descent visits them: the ones
# Kronos (Eadline and Layton) and I-Cluster (Richard et al.) found to matter most first
# (block size, grid), then the
# look-ahead and broadcast that hide or expose the network, then the panel details.
PARAMS = ("nb", "grid", "depth", "bcast", "swap", "swap_threshold", "pfact", "rfact", "nbmin", "ndiv", "pmap")

# Fallback NB candidates (HPL's tuning notes: good NBs are almost always in [32, 256];
# a small multiple of the BLAS blocking) when no DGEMM k-sweep is stored.
FALLBACK_NBS = (64, 96, 128, 160, 192, 224, 256)
SWAP_NAMES = ("bin", "long", "mix")


def factorisations(ranks: int) -> list[tuple[int, int]]:
    """Every P x Q with P * Q = ranks, not only the near-square ones (Kronos, Eadline and Layton: 2 x 4 beat 1 x 8)."""
    if ranks < 1:
        raise ValueError(f"a process grid needs at least 1 rank, not {ranks}")
    return [(p, ranks // p) for p in range(1, ranks + 1) if ranks % p == 0]


def round_n(n: int, nb: int, p: int, q: int) -> int:
    """N rounded down to a multiple of NB x lcm(P, Q); never below one block step."""
    step = nb * math.lcm(p, q)
    return max(step, n - n % step)


def n_from_memory(memory_bytes: float, fraction: float) -> int:
    """The N whose matrix (8 N^2 bytes) fills `fraction` of memory_bytes (before rounding)."""
    return int(math.sqrt(fraction * memory_bytes / 8))


def grid_text(grid) -> str:
    return f"{grid[0]}x{grid[1]}"


def parse_grid_text(text: str) -> tuple[int, int]:
    p, q = text.lower().split("x")
    return int(p), int(q)


@dataclass
class Space:
    """Candidate values per parameter, and the two problem sizes the strategies use."""

    ranks: int
    n_full: int                               # unrounded target N at full size
    n_reduced: int                            # unrounded target N for cheap exploratory trials
    nb: list[int] = field(default_factory=lambda: list(FALLBACK_NBS))
    grid: list[tuple[int, int]] = field(default_factory=list)
    depth: list[int] = field(default_factory=lambda: [0, 1, 2])
    bcast: list[int] = field(default_factory=lambda: [0, 1, 2, 3, 4, 5])
    swap: list[int] = field(default_factory=lambda: [0, 1, 2])
    swap_threshold: list[int] = field(default_factory=lambda: [32, 64, 128, 256])
    pfact: list[int] = field(default_factory=lambda: [0, 1, 2])
    rfact: list[int] = field(default_factory=lambda: [0, 1, 2])
    nbmin: list[int] = field(default_factory=lambda: [2, 4, 8])
    ndiv: list[int] = field(default_factory=lambda: [2, 3, 4])
    pmap: list[int] = field(default_factory=lambda: [0, 1])
    threshold: float = 16.0                   # residual check; not searched
    nb_source: str = "HPL's tuning notes (multiples of 32 in [64, 256])"
    n_source: str = "memory"                  # what set n_full: --n, memory, or the time budget
    engine: str = "rmax"                      # whose broadcasts decide which variants coincide (equivalence)
    n_memory: int | None = None               # the N that fills --mem-fraction of memory (explained, not run)
    n_budget: int | None = None               # the N a time budget allows, at the first-guess rate
    n_budget_source: str = ""

    def __post_init__(self):
        if not self.grid:
            self.grid = factorisations(self.ranks)
        self.grid = [tuple(g) for g in self.grid]

    def values(self, param: str) -> list:
        return list(getattr(self, param))

    @property
    def size(self) -> int:
        """Number of distinct candidates at one problem size."""
        return math.prod(len(self.values(p)) for p in PARAMS)

    def n_at(self, full: bool) -> int:
        """The one N of a level for every candidate (see the module's note)."""
        dims = math.lcm(*(d for g in self.grid for d in g))
        return round_n(self.n_full if full else self.n_reduced, 1, dims, 1)

    def sized(self, cand: dict, full: bool) -> dict:
        """cand with the N of the given level (reduced or full): the same for every candidate; and
        with the values that cannot matter on its grid made one (rmax.tune.equivalence), so that
        no strategy measures the same run twice under two names."""
        from rmax.tune.equivalence import canonical

        return canonical({**cand, "n": self.n_at(full)}, {p: self.values(p) for p in PARAMS}, self.engine)

    def heuristic(self) -> dict:
        """HPL's tuning notes' advice: most square grid with P <= Q,
        row mapping, Crout panel, right recursive, NBMIN 4, NDIV 2, 1ringM, depth 1, mix swap
        with its threshold near NB; NB the first (best-ranked) candidate."""
        nb = self.nb[0]
        grid = min((g for g in self.grid if g[0] <= g[1]), key=lambda g: g[1] - g[0], default=self.grid[0])
        want = {"nb": nb, "grid": grid, "pmap": 0, "pfact": 1, "rfact": 2, "nbmin": 4, "ndiv": 2, "bcast": 1,
                "depth": 1, "swap": 2, "swap_threshold": nb}
        return {k: self._nearest(k, v) for k, v in want.items()}

    def stock(self) -> dict:
        """HPL 2.3's shipped HPL.dat made runnable at this size: its first listed value of every
        variant field (left panel and recursion, NBMIN 2, NDIV 2, 1ring, depth 0, mix swap at 64,
        row mapping); its NBs (1-4) and tiny Ns would take hours at a real N, so NB is the middle
        fallback candidate and the grid is the most square one. This is the "start" every
        change is measured against."""
        from rmax.tune.equivalence import STOCK

        grid = min((g for g in self.grid if g[0] <= g[1]), key=lambda g: g[1] - g[0], default=self.grid[0])
        want = {"nb": 128, "grid": grid, **STOCK}
        return {k: self._nearest(k, v) for k, v in want.items()}

    def _nearest(self, param: str, value):
        vals = self.values(param)
        if value in vals or param == "grid" and value in vals:
            return value
        if param == "grid":
            return vals[0]
        return min(vals, key=lambda v: (abs(v - value), v))

    def to_dict(self) -> dict:
        d = asdict(self)
        d["grid"] = [list(g) for g in self.grid]
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Space":
        d = dict(d)
        d["grid"] = [tuple(g) for g in d.get("grid", [])]
        return cls(**d)


def key(cand: dict) -> tuple:
    """A hashable identity of a sized candidate (N included)."""
    return (cand.get("n"),) + tuple(tuple(cand[p]) if p == "grid" else cand[p] for p in PARAMS)


def to_config(cand: dict, threshold: float = 16.0) -> HplConfig:
    """A one-test HPL.dat for a sized candidate."""
    return HplConfig(ns=[cand["n"]], nbs=[cand["nb"]], pmap=cand["pmap"], grids=[tuple(cand["grid"])],
                     threshold=threshold, pfacts=[cand["pfact"]], nbmins=[cand["nbmin"]], ndivs=[cand["ndiv"]],
                     rfacts=[cand["rfact"]], bcasts=[cand["bcast"]], depths=[cand["depth"]], swap=cand["swap"],
                     swap_threshold=cand["swap_threshold"])


def from_config(cfg: HplConfig) -> dict:
    """The candidate a one-test HplConfig stands for (used when a session is resumed)."""
    return {"n": cfg.ns[0], "nb": cfg.nbs[0], "grid": tuple(cfg.grids[0]), "pmap": cfg.pmap, "pfact": cfg.pfacts[0],
            "rfact": cfg.rfacts[0], "nbmin": cfg.nbmins[0], "ndiv": cfg.ndivs[0], "bcast": cfg.bcasts[0],
            "depth": cfg.depths[0], "swap": cfg.swap, "swap_threshold": cfg.swap_threshold}


def variant_code(cand: dict) -> str:
    """HPL's result code (WR11C2R4) for the candidate."""
    return HplConfig(pmap=cand["pmap"]).variant_code(cand)


def describe(cand: dict, param: str) -> str:
    v = cand[param]
    if param == "grid":
        return grid_text(v)
    if param == "swap":
        return SWAP_NAMES[v]
    if param == "bcast":
        from rmax.hpl.dat import BCAST_NAMES

        return BCAST_NAMES[v]
    if param in ("pfact", "rfact"):
        return "LCR"[v]
    if param == "pmap":
        return "RC"[v]
    return str(v)
