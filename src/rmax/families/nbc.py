"""nbc: non-blocking collectives and the computation they let overlap them (native/net/cmd_nbc.c),
OSU's method (osu_iallreduce, osu_ibcast, osu_ialltoall): the collective alone, a computation
loop alone (each rank's calibrated to last as long), and both overlapped; overlap % =
100 x (1 - (overlapped - the loop's time inside it) / collective), within [0, 100]. Each figure is the median
of --repeats repeats of the three measurements; the outputs are checked against their seed."""

from __future__ import annotations

from dataclasses import dataclass, field

from rmax.bench.family import Family, Summary, option, register
from rmax.bench.netlaunch import (MAX_MESSAGE, cell, check_memory, check_message_sizes, header_summary, require_ranks,
                                  split_records, parsed_records)
from rmax.bench.view import Figure, Plot, Table, View, figure
from rmax.native import executable
from rmax.params import Count, Names, Seconds, SizeList
from rmax.sizes import human_size
from rmax.stats import spread

SCHEMA = "rmax.nbc/1"
OPS = ("iallreduce", "ibcast", "ialltoall", "ireduce", "iallgather", "ireduce_scatter", "iscatter", "igather")
MEDIAN = "median over repeats of the per-call time averaged over ranks"


@dataclass
class NbcOptions:
    ops: tuple[str, ...] = option(OPS[:3], "Non-blocking collectives: " + ", ".join(OPS) + ".",
                                  type=Names(OPS, "operation"))
    sizes: tuple[int, ...] = option((8, 1024, 65536, 1 << 20), "Bytes per rank.", type=SizeList(1, MAX_MESSAGE),
                                    quick=(8, 65536))
    budget: float = option(0.02, "Seconds of timed repetitions per measurement.",
                           type=Seconds(0.001, 3600, lo_open=False),
                           quick=0.005)
    repeats: int = option(3, "Times each point's three measurements are made (the median is reported).",
                          type=Count(1, 1000))
    max_samples: int = option(100, "Most samples per measurement.", type=Count(5, 100000), cli=False)
    min_samples: int = option(5, "Fewest samples per measurement.", type=Count(2, 100000), cli=False)
    self_test_corrupt: bool = option(False, "Rank 0 damages its input: the run must come out invalid.",
                                     flag="--self-test-corrupt")


@dataclass
class NbcPoint:
    op: str
    size: int                    # bytes per rank
    procs: int
    validated: bool
    converged: bool | None = None
    comm: float | None = None       # s per call, the collective alone
    compute: float | None = None    # s per call, the computation alone
    overall: float | None = None    # s per call, both overlapped
    busy: float | None = None       # s per call, the computation's own time inside `overall` (OSU's "Compute")
    overlap: float | None = None    # % of the collective hidden behind the computation
    comm_repeats: list[float] = field(default_factory=list)
    compute_repeats: list[float] = field(default_factory=list)
    overall_repeats: list[float] = field(default_factory=list)
    busy_repeats: list[float] = field(default_factory=list)
    overlap_repeats: list[float] = field(default_factory=list)
    stable: bool | None = None      # the repeats' overlap agrees within 10 points


@dataclass
class NbcSummary(Summary):
    SCHEMA = SCHEMA
    points: list[NbcPoint]
    hosts: list[str]
    mpi_library: str | None = None
    repeats: int = 0
    statistic: str = MEDIAN

    def valid(self) -> list[tuple[int, NbcPoint]]:
        return [(i, p) for i, p in enumerate(self.points) if p.validated and p.comm]


def _point(r: dict) -> NbcPoint:
    ovl = list(r.get("overlap_repeats", []))
    return NbcPoint(r["op"], r["size"], r["procs"], bool(r["validated"]), r.get("converged"), r.get("comm"),
                    r.get("compute"), r.get("overall"), r.get("busy"), r.get("overlap"),
                    list(r.get("comm_repeats", [])), list(r.get("compute_repeats", [])),
                    list(r.get("overall_repeats", [])), list(r.get("busy_repeats", [])), ovl,
                    (max(ovl) - min(ovl) <= 10) if len(ovl) > 1 else None)


@register
class Nbc(Family):
    """Non-blocking collectives: the collective alone, a computation alone, both overlapped, and the
    overlap % (OSU's method). On request: no survey step."""

    name = "nbc"
    title = "non-blocking collectives: overlap with computation (OSU iallreduce, ibcast, ialltoall)"
    Options = NbcOptions
    Summary = NbcSummary
    scope = "net"
    native = ("rmax-net", "nbc")
    example = "rmax bench nbc --ops iallreduce --sizes 8,64K,1MiB"

    def check(self, o, ctx):
        np_ = self.ranks(ctx)
        require_ranks(np_, "nbc (a collective)", minimum=2)
        check_message_sizes(o.sizes)
        check_memory(2 * max(o.sizes) * np_, ctx.spec.ranks_on_this_host() if ctx.spec else np_,
                     "the collective buffers (2 x size x ranks)")

    def argv(self, o):
        a = [executable("rmax-net"), "nbc", "--json", "-", "--ops", ",".join(o.ops),
             "--sizes", ",".join(map(str, sorted(set(o.sizes)))), "--budget", str(o.budget), "--repeats",
             str(o.repeats), "--max-samples", str(o.max_samples), "--min-samples", str(o.min_samples)]
        if o.self_test_corrupt:
            a.append("--self-test-corrupt")
        return a

    def timeout(self, o):
        # Three measurements a repeat, each about ten batches past its budget; a batch of the largest
        # collective over a 100 MB/s transport, with the computation as long again.
        points = len(o.ops) * len(set(o.sizes))
        return 120.0 + o.repeats * points * 3 * (3.0 * o.budget + 20 * max(o.sizes) / 1e8)

    def parse(self, records):
        header, recs, done = split_records(records, SCHEMA)
        pts = [_point(r) for r in recs]
        summary = NbcSummary(pts, **header_summary(header), repeats=(header or {}).get("repeats", 0))
        samples = {f"{p.op}/{p.size}": p.overlap_repeats for p in pts}
        bad = [f"{p.op} {human_size(p.size)}" for p in pts if not p.validated]
        return parsed_records(summary, samples, bad, done, "wrong collective results at",
                       "rmax-net nbc stopped before its last point")

    def _overlap(self, s: NbcSummary, i: int, p: NbcPoint) -> Figure | None:
        return figure(s, ("points", i, "overlap"), f"overlap.{p.op}.{p.procs}.{p.size}",
                      f"{p.op} overlap, {p.procs} processes, {human_size(p.size)}", "%", MEDIAN + " (OSU's formula)",
                      repeats=("points", i, "overlap_repeats"))

    def _comm(self, s: NbcSummary, i: int, p: NbcPoint) -> Figure | None:
        return figure(s, ("points", i, "comm"), f"comm.{p.op}.{p.procs}.{p.size}",
                      f"{p.op} alone, {p.procs} processes, {human_size(p.size)}", "us", MEDIAN, scale=1e6,
                      better="lower", repeats=("points", i, "comm_repeats"))

    def headline(self, s: NbcSummary) -> list[Figure]:
        out = []
        for op in OPS:
            mine = [(i, p) for i, p in s.valid() if p.op == op]
            if mine:
                out.append(self._overlap(s, *max(mine, key=lambda ip: ip[1].size)))
        return [f for f in out if f]

    def metrics(self, s: NbcSummary) -> list[Figure]:
        out = [f(s, i, p) for i, p in s.valid() for f in (self._overlap, self._comm)]
        return [f for f in out if f]

    def view(self, s: NbcSummary) -> View:
        pts = sorted(s.points, key=lambda p: (OPS.index(p.op) if p.op in OPS else len(OPS), p.size))
        rows = []
        for p in pts:
            sp = spread(p.overlap_repeats)
            rows.append([p.op, str(p.procs), human_size(p.size), cell(p.comm, 1e6), cell(p.compute, 1e6),
                         cell(p.overall, 1e6), cell(p.busy, 1e6), cell(p.overlap, 1.0, ".1f"),
                         f"{sp['min']:.1f}-{sp['max']:.1f}" if sp["n"] > 1 else "—",
                         "" if p.validated else "INVALID"])
        t = Table(["Operation", "Procs", "Size (per rank)", "Collective alone (us)", "Computation alone (us)",
                   "Overlapped (us)", "Computing inside it (us)", "Overlap %", "Overlap range", "Note"], rows,
                  f"{len(s.hosts)} ranks on {', '.join(sorted(set(s.hosts)))}; {MEDIAN}, {s.repeats} repeats",
                  left=3)
        notes = ["Overlap % = 100 x (1 - (overlapped - computing inside it) / collective alone), within [0, 100], "
                 "OSU's formula; the computation makes no MPI call, so what overlaps is what the MPI library "
                 "progresses on its own."]
        if any(p.stable is False for p in s.points):
            notes.append("Some points' repeats disagree by more than 10 points of overlap: the machine was not "
                         "quiet, or the ranks share cores.")
        data = [{"op": p.op, "procs": p.procs, "size": p.size, "comm_s": p.comm, "compute_s": p.compute,
                 "overall_s": p.overall, "busy_s": p.busy, "overlap_pct": p.overlap, "validated": p.validated}
                for p in pts]
        return View([t], notes, {"nbc": data})

    def plots(self, runs):
        series: dict[str, tuple[list, list]] = {}
        for label, s in runs:
            for _, p in sorted(s.valid(), key=lambda ip: ip[1].size):
                if p.overlap is not None:
                    xs, ys = series.setdefault(f"{label}: {p.op}", ([], []))
                    xs.append(max(p.size, 1))
                    ys.append(p.overlap)
        if not series:
            return []
        return [Plot("line", "Overlap of non-blocking collectives vs message size", "bytes per rank",
                     "overlap % (median of repeats)", series, logx=True)]
