"""rma: one-sided MPI between two ranks (native/net/cmd_rma.c): put, get and accumulate, latency
(one operation per epoch) and bandwidth (a window of operations per epoch), under lock/unlock,
lock with MPI_Win_flush (OSU's default), fence, and post-start-complete-wait, as OSU's
osu_put_latency, osu_get_bw and osu_acc_latency measure them. Every operation's payload is
marked and checked; a damaged one makes the run invalid."""

from __future__ import annotations

from dataclasses import dataclass

from rmax.bench.family import Family, Summary, option, register
from rmax.bench.netlaunch import (MAX_MESSAGE, cell, check_memory, check_message_sizes, header_summary, require_ranks,
                                  split_records, parsed_records)
from rmax.bench.view import Figure, Plot, Table, View, figure
from rmax.errors import RmaxError
from rmax.native import executable
from rmax.params import Count, Names, Seconds, Size, SizeList
from rmax.sizes import human_size

SCHEMA = "rmax.rma/1"
OPS = ("put", "get", "acc")
SYNCS = ("lock", "flush", "fence", "pscw")
TESTS = ("latency", "bandwidth")
STATISTIC = "median over samples of rank 0's time per operation"


@dataclass
class RmaOptions:
    ops: tuple[str, ...] = option(OPS, "Operations: put, get, acc (accumulate: 32-bit unsigned sums).",
                                  type=Names(OPS, "operation"))
    syncs: tuple[str, ...] = option(SYNCS, "Synchronisations: lock (lock/unlock per epoch), flush (one lock, "
                                    "MPI_Win_flush per epoch: OSU's default), fence, pscw "
                                    "(post-start-complete-wait).", type=Names(SYNCS, "synchronisation"))
    tests: tuple[str, ...] = option(TESTS, "latency (one operation per epoch), bandwidth (a window per epoch).",
                                    type=Names(TESTS, "test"))
    sizes: tuple[int, ...] = option((8, 512, 65536, 1 << 20), "Message sizes, e.g. 8,64K,1MiB.",
                                    type=SizeList(1, MAX_MESSAGE), quick=(8, 65536))
    window: int = option(64, "Operations per epoch of the bandwidth test (OSU's default).", type=Count(1, 1024))
    window_bytes: int = option(64 << 20, "Bytes per bandwidth epoch at most: a large message gets a shorter window "
                               "(0: no bound).", type=Size(0, 1 << 40), show="64MiB")
    budget: float = option(0.02, "Seconds of timed repetitions per point.", type=Seconds(0.001, 3600, lo_open=False),
                           quick=0.005)
    max_samples: int = option(200, "Most samples per point.", type=Count(5, 100000), cli=False)
    min_samples: int = option(5, "Fewest samples per point.", type=Count(2, 100000), cli=False)
    validate: bool = option(False, "Check every byte of every operation (slower; marks are always checked).",
                            flag="--validate")
    self_test_corrupt: bool = option(False, "Damage one byte of every payload: the run must come out invalid.",
                                     flag="--self-test-corrupt")


@dataclass
class RmaPoint:
    op: str
    sync: str
    test: str
    size: int
    window: int                  # operations per epoch
    latency: float | None        # s per operation, median over samples
    n: int | None
    ci95: list[float] | None
    validated: bool
    converged: bool | None = None
    bandwidth: float | None = None   # bytes/s: size / latency


@dataclass
class RmaSummary(Summary):
    SCHEMA = SCHEMA
    points: list[RmaPoint]
    hosts: list[str]
    mpi_library: str | None = None
    statistic: str = STATISTIC

    def valid(self, test: str) -> list[tuple[int, RmaPoint]]:
        return [(i, p) for i, p in enumerate(self.points) if p.test == test and p.validated and p.latency]


def _point(r: dict) -> RmaPoint:
    s = r.get("summary") or {}
    lat = s.get("median")
    return RmaPoint(r["op"], r["sync"], r["test"], r["size"], r["window"], lat, s.get("n"), s.get("ci95"),
                    bool(r.get("validated")), r.get("converged"), r["size"] / lat if lat else None)


def _name(p: RmaPoint) -> str:
    return f"{p.op} {p.sync} {p.test} {human_size(p.size)}"


def _epoch_bytes(o) -> int:
    largest = max(o.sizes)
    w = o.window if "bandwidth" in o.tests else 1
    if o.window_bytes and w * largest > o.window_bytes:
        w = max(1, o.window_bytes // largest)
    return w * largest


@register
class Rma(Family):
    """One-sided MPI between two ranks: put, get and accumulate latency and bandwidth, per
    synchronisation (lock, flush, fence, pscw), OSU's one-sided tests. On request: no survey step."""

    name = "rma"
    title = "one-sided MPI: put, get, accumulate latency and bandwidth (OSU one-sided)"
    Options = RmaOptions
    Summary = RmaSummary
    scope = "net"
    native = ("rmax-net", "rma")
    example = "rmax bench rma --ops put,get --syncs flush --sizes 8,1MiB"

    def check(self, o, ctx):
        require_ranks(self.ranks(ctx), "rma (one origin, one target)", exactly=2)
        check_message_sizes(o.sizes)
        if "acc" in o.ops:
            odd = [s for s in o.sizes if s % 4]
            if odd:
                raise RmaxError(f"--sizes: {odd[0]} is not a multiple of 4 bytes, as accumulate's 32-bit elements "
                                "need", hint="use multiples of 4, or leave acc out of --ops")
        check_memory(3 * _epoch_bytes(o), ctx.spec.ranks_on_this_host() if ctx.spec else 2,
                     "rma's window, origin and check buffers")

    def argv(self, o):
        a = [executable("rmax-net"), "rma", "--json", "-", "--ops", ",".join(o.ops), "--syncs", ",".join(o.syncs),
             "--tests", ",".join(o.tests), "--sizes", ",".join(map(str, sorted(set(o.sizes)))),
             "--window", str(o.window), "--window-bytes", str(o.window_bytes), "--budget", str(o.budget),
             "--max-samples", str(o.max_samples), "--min-samples", str(o.min_samples)]
        if o.validate:
            a.append("--validate")
        if o.self_test_corrupt:
            a.append("--self-test-corrupt")
        return a

    def timeout(self, o):
        # Past its budget a point takes about ten batches (calibration, warm-up, five samples), each
        # of one epoch or more; 100 MB/s is slower than any transport MPI's one-sided calls run over.
        points = len(o.ops) * len(o.syncs) * len(o.tests) * len(set(o.sizes))
        return 120.0 + points * (3.0 * o.budget + 10 * _epoch_bytes(o) / 1e8)

    def parse(self, records):
        header, recs, done = split_records(records, SCHEMA)
        pts = [_point(r) for r in recs]
        summary = RmaSummary(pts, **header_summary(header))
        samples = {_name(p): r.get("samples", []) for p, r in zip(pts, recs)}
        bad = [_name(p) for p in pts if not p.validated]
        return parsed_records(summary, samples, bad, done, "one-sided payload validation failed at",
                       "rmax-net rma stopped before its last point")

    def _latency(self, s: RmaSummary, i: int, p: RmaPoint) -> Figure | None:
        return figure(s, ("points", i, "latency"), f"latency.{p.op}.{p.sync}.{p.size}",
                      f"MPI_{p.op.capitalize()} latency, {p.sync}, {human_size(p.size)}", "us", STATISTIC,
                      scale=1e6, better="lower")

    def _bandwidth(self, s: RmaSummary, i: int, p: RmaPoint) -> Figure | None:
        return figure(s, ("points", i, "bandwidth"), f"bandwidth.{p.op}.{p.sync}.{p.size}",
                      f"MPI_{p.op.capitalize()} bandwidth, {p.sync}, window {p.window}, {human_size(p.size)}",
                      "MB/s", STATISTIC + ", as size / time", scale=1e-6)

    def headline(self, s: RmaSummary) -> list[Figure]:
        out = []
        for test, pick, make in (("latency", min, self._latency), ("bandwidth", max, self._bandwidth)):
            good = s.valid(test)
            for op in OPS:
                mine = [(i, p) for i, p in good if p.op == op]
                if not mine:
                    continue
                sync = "flush" if any(p.sync == "flush" for _, p in mine) else mine[0][1].sync
                mine = [(i, p) for i, p in mine if p.sync == sync]
                out.append(make(s, *pick(mine, key=lambda ip: ip[1].size)))
        return [f for f in out if f]

    def metrics(self, s: RmaSummary) -> list[Figure]:
        out = [self._latency(s, i, p) for i, p in s.valid("latency")]
        out += [self._bandwidth(s, i, p) for i, p in s.valid("bandwidth")]
        return [f for f in out if f]

    def view(self, s: RmaSummary) -> View:
        pts = sorted(s.points, key=lambda p: (TESTS.index(p.test), OPS.index(p.op), SYNCS.index(p.sync), p.size))
        rows = [[p.test, p.op, p.sync, human_size(p.size), str(p.window), cell(p.latency, 1e6, ".3f"),
                 cell(p.bandwidth, 1e-6, ".1f"), "" if p.validated else "INVALID"] for p in pts]
        t = Table(["Test", "Operation", "Sync", "Size", "Ops per epoch", "Time per op (us)", "MB/s", "Note"], rows,
                  f"2 ranks on {', '.join(sorted(set(s.hosts)))}; {STATISTIC}; MB = 10^6 bytes", left=3)
        notes = ["lock: lock/unlock around every epoch; flush: one lock, MPI_Win_flush after every epoch (OSU's "
                 "default); fence and pscw latency: the ranks take turns, the round halved (OSU's method)."]
        data = [{"test": p.test, "op": p.op, "sync": p.sync, "size": p.size, "window": p.window,
                 "latency_s": p.latency, "bandwidth_Bps": p.bandwidth, "validated": p.validated} for p in pts]
        return View([t], notes, {"rma": data})

    def plots(self, runs):
        out = []
        for test, unit, value in (("latency", "time per operation (us)", lambda p: p.latency * 1e6),
                                  ("bandwidth", "MB/s", lambda p: p.bandwidth / 1e6)):
            series: dict[str, tuple[list, list]] = {}
            for label, s in runs:
                for _, p in sorted(s.valid(test), key=lambda ip: ip[1].size):
                    xs, ys = series.setdefault(f"{label}: {p.op} {p.sync}", ([], []))
                    xs.append(p.size)
                    ys.append(value(p))
            if series:
                out.append(Plot("line", f"One-sided {test} vs message size", "bytes", unit, series, logx=True,
                                logy=True))
        return out
