"""coll: collectives vs message size, process count and rank order (native/net/cmd_coll.c).

goptest's view (mpptest, Gropp and Lusk): the same operation on 2, 4, ... all of
the launched ranks, and with the ranks in natural order, with the second half
reversed, shuffled, and in the Helix study's node orders (cyclic: one rank of
each node in turn; serpentine: every other turn backwards), since the order
decides which ranks share a node in each step."""

from __future__ import annotations

from dataclasses import dataclass

from rmax.bench.family import Family, Summary, SurveyPlan, option, register
from rmax.bench.netlaunch import (MESSAGES, cell, check_memory, check_message_sizes, check_names, cut_of,
                                  header_summary, require_ranks, split_records, parsed_records, swept, sweep_notes)
from rmax.bench.view import Figure, Plot, Table, View, figure
from rmax.errors import RmaxError
from rmax.launch.base import MAX_RANKS
from rmax.native import executable
from rmax.params import Count, Names, NumberList, Seconds

OPS = ("bcast", "reduce", "allreduce", "allgather", "alltoall", "barrier", "reduce_scatter", "scatter", "gather")
DEFAULT_OPS = OPS[:6]   # reduce_scatter, scatter and gather on request
ORDERS = ("natural", "reversed", "random", "cyclic", "serpentine")
DEFAULT_ORDERS = ORDERS[:3]   # the node orders differ from natural only with several ranks per node
STATISTIC = "median over samples of the per-call time; avg/min/max over ranks"


@dataclass
class CollOptions:
    ops: tuple[str, ...] = option(DEFAULT_OPS, "Operations: " + ", ".join(OPS) + ".", type=Names())
    sizes: tuple[int, ...] = option((8, 64, 512, 4096, 32768, 262144, 1 << 20), "Bytes per rank.", type=MESSAGES,
                                    quick=(8, 65536))
    procs: tuple[int, ...] | None = option(None, "Process counts.", type=NumberList(2, MAX_RANKS, integer=True),
                                           show="2, 4, ..., all")
    orders: tuple[str, ...] = option(DEFAULT_ORDERS, "Rank orders: natural, reversed, random, cyclic, serpentine.",
                                     type=Names())
    seed: int = option(1, "Seed of the random order.", type=Count(1, 10**18))
    budget: float = option(0.02, "Seconds per point.", type=Seconds(0.001, 3600, lo_open=False), quick=0.005)
    sweep_budget: float = option(0.0, "Seconds all points may take (0: no limit); past them the points not yet "
                                      "measured are left out and the run is partial.",
                                 type=Seconds(0, 86400, lo_open=False))
    max_samples: int = option(100, "Most samples per point.", type=Count(5, 100000), quick=20, cli=False)
    min_samples: int = option(5, "Fewest samples per point (the survey's plan lowers it where ranks crowd "
                                 "few cores: below 5, no warm-up batch either).", type=Count(2, 100000), cli=False)


@dataclass
class CollPoint:
    op: str
    procs: int
    order: str
    size: int                        # bytes per rank
    rank_order: list[int] | None
    avg: float | None                # s per call: median over samples of the average over ranks
    min: float | None                # ... of the fastest rank
    max: float | None                # ... of the slowest rank
    n: int | None
    ci95: list[float] | None
    validated: bool | None


@dataclass
class CollSummary(Summary):
    SCHEMA = "rmax.coll/2"
    points: list[CollPoint]
    hosts: list[str]
    mpi_library: str | None = None
    procs: list[int] = ()
    statistic: str = STATISTIC
    cut: str | None = None           # what the sweep budget left out (the points from one on)


def _point(r: dict) -> CollPoint:
    def med(key):
        return (r.get(key) or {}).get("median")
    return CollPoint(r["op"], r["procs"], r["order"], r["size"], r.get("rank_order"), med("summary"),
                     med("rank_min"), med("rank_max"), r["summary"].get("n"), r["summary"].get("ci95"),
                     r.get("validated"))


def _cut_at(r: dict) -> str:
    """What the kernel's sweep budget left out (its "cut" record names the first point)."""
    op = r.get("op")
    size = f" of {r['size']} B" if r.get("size") else ""
    first = f"{op}{size} at " if op else ""
    return f"the points from {first}{r['procs']} processes, {r['order']} order on (after {r['elapsed']:.1f} s)"


def _key(p: CollPoint) -> str:
    return f"{p.op}/{p.procs}/{p.order}/{p.size}"


@register
class Coll(Family):
    """Collectives vs message size, process count (2, 4, ..., all) and rank order,
    with min, avg and max over the ranks."""

    name = "coll"
    native = ("rmax-net", "coll")
    title = "collectives vs message size and process count"
    Options = CollOptions
    Summary = CollSummary
    scope = "net"
    default_np = None
    survey = SurveyPlan("collectives vs process count", 0.06, 41, ranks="all")
    example = "rmax bench coll --np 4 --oversubscribe --quick"

    def check(self, o, ctx):
        np_ = self.ranks(ctx)
        require_ranks(np_, "the collectives test", minimum=2)
        check_names(o.ops, OPS, "operation")
        check_names(o.orders, ORDERS, "order")
        if o.procs and max(o.procs) > np_:
            raise RmaxError(f"--procs {max(o.procs)} is more than the {np_} ranks launched")
        if o.procs and min(o.procs) < 2:
            raise RmaxError("--procs: a collective needs at least 2 processes")
        check_message_sizes(o.sizes)
        check_memory(2 * max(o.sizes) * np_, ctx.spec.ranks_on_this_host() if ctx.spec else np_,
                     "the collective buffers (2 x size x ranks)")

    def argv(self, o):
        a = [executable("rmax-net"), "coll", "--json", "-", "--ops", ",".join(o.ops), "--orders", ",".join(o.orders),
             "--sizes", ",".join(map(str, o.sizes)), "--seed", str(o.seed), "--budget", str(o.budget),
             "--max-samples", str(o.max_samples), "--min-samples", str(o.min_samples),
             "--sweep-budget", str(o.sweep_budget)]
        if o.procs:
            a += ["--procs", ",".join(map(str, o.procs))]
        return a

    def parse(self, records):
        header, points, done = split_records(records, "rmax.coll/1")
        pts = [_point(r) for r in points]
        samples = {_key(p): r.get("samples", []) for p, r in zip(pts, points)}
        cut = cut_of(records, "rmax.coll/1")
        where = _cut_at(cut) if cut else None
        summary = CollSummary(pts, **header_summary(header), procs=header.get("procs") if header else [], cut=where)
        bad = [_key(p) for p in pts if not p.validated]
        return swept(parsed_records(summary, samples, bad, done, "wrong collective results at",
                                    "rmax-net coll stopped before its last point"), cut, where)

    def metrics(self, s: CollSummary) -> list[Figure]:
        out = [figure(s, ("points", i, "avg"), f"{p.op}.{p.procs}.{p.size}",
                      f"{p.op}, {p.procs} processes, {p.size} B", "us", STATISTIC, scale=1e6, better="lower")
               for i, p in enumerate(s.points) if p.order == "natural"]
        return [f for f in out if f]

    def view(self, s: CollSummary) -> View:
        pts = sorted(s.points, key=lambda p: (OPS.index(p.op) if p.op in OPS else len(OPS), p.op, p.order, p.procs,
                                              p.size))
        rows = [[p.op, str(p.procs), p.order, str(p.size), cell(p.avg, 1e6), cell(p.min, 1e6), cell(p.max, 1e6),
                 "" if p.validated else "INVALID"] for p in pts]
        t = Table(["Operation", "Procs", "Order", "Size (bytes per rank)", "Avg latency (us)", "Min latency (us)",
                   "Max latency (us)", "Note"], rows,
                  f"{len(s.hosts)} ranks on {', '.join(sorted(set(s.hosts)))}; {STATISTIC}", left=3)
        data = [{"op": p.op, "procs": p.procs, "order": p.order, "size": p.size, "avg_s": p.avg, "min_s": p.min,
                 "max_s": p.max, "n": p.n, "validated": p.validated} for p in pts]
        return View([t], sweep_notes(s.cut), {"collectives": data})

    def plots(self, runs):
        out = []
        for label, s in runs:
            sizes = sorted({p.size for p in s.points})
            probe = sizes[len(sizes) // 2] if sizes else None
            series: dict[str, tuple[list, list]] = {}
            for p in s.points:
                if p.size == probe and p.order == "natural" and p.avg is not None:
                    xs, ys = series.setdefault(p.op, ([], []))
                    xs.append(p.procs)
                    ys.append(p.avg * 1e6)
            if series:
                out.append(Plot("line", f"Collectives vs process count (natural order), {label}", "processes",
                                f"time per call (us, avg over ranks), {probe} B", series))
        return out
