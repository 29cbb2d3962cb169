"""oslat: operating-system latencies after lmbench (native/node/oslat*.c): system calls, files,
signals, processes, context switches, pipe/AF_UNIX/UDP/TCP round trips, TCP connect and
bandwidth, over 127.0.0.1 only. Every process is pinned to a named CPU, recorded with its
figure: context switches with the whole ring on one CPU (lmbench's lat_ctx), round trips
both with the peer on a second CPU and on the same one, as separate figures; and the cache-line
round trip between two CPUs, the floor under every 2-CPU round trip.

Context switches are a difference: a lap of the ring less one process's pipe hop and
working-set read (lmbench's lat_ctx). The kernel stores its samples as measured, the hop
included, and records the hop's cost before and after the ring was timed; the subtraction is
made here, on the summary (median, min, max, mean less the hop). A difference at or below its
resolution (the hop's spread, its drift between before and after, or the timer's) is
unresolved: None in the summary, "below resolution" in the view, no figure to compare. So no
stored sample or figure is ever a negative or unresolvable latency."""

from __future__ import annotations

from dataclasses import dataclass, field

from rmax.bench.family import Family, Summary, SurveyPlan, option, register
from rmax.bench.node_kernel import invalid
from rmax.bench.runner import Parsed
from rmax.bench.view import Figure, Table, View, cell, figure
from rmax.native import executable
from rmax.params import Names, Seconds

TESTS = ("null", "stat", "open-close", "sig-install", "sig-catch", "fork-exit", "fork-exec", "pipe", "unix", "ctxsw",
         "udp", "tcp", "tcp-connect", "tcp-bw", "cacheline")
STATISTIC = "median of timed batches; us per operation, MB/s (10^6 bytes/s) for bandwidth"


@dataclass
class OslatOptions:
    tests: tuple[str, ...] = option(TESTS, f"Comma-separated subset: {', '.join(TESTS)}.",
                                    type=Names(TESTS, "oslat test"), show="all")
    budget: float = option(25.0, "Seconds for all tests.", type=Seconds(0.01, 86400, lo_open=False), quick=3.0)


@dataclass
class OsResult:
    label: str                  # "null syscall", "ctxsw 8p/16K"
    test: str                   # the test it is a result of (TESTS)
    unit: str                   # us, or MB/s for tcp-bw
    median: float | None        # None: a difference at or below its resolution (module note)
    min: float | None
    max: float | None
    mean: float | None
    n: int
    procs: int | None = None            # ctxsw: processes in the ring
    ws_bytes: int | None = None         # ctxsw: bytes each process reads between switches
    overhead_us: float | None = None    # ctxsw: the pipe hop and working-set read subtracted (mean of before, after)
    resolution_us: float | None = None  # ctxsw: the finest a derived figure resolves (module note)
    cpus: list[int] | None = None       # the CPUs its processes were pinned to: this one, then the peers'

    @property
    def better(self) -> str:
        return "higher" if self.unit == "MB/s" else "lower"

    def shown(self, value: float | None) -> str:
        """A value as a cell: an unresolved difference is no number at all."""
        return cell(value, ".3f") if value is not None else f"below resolution (< {self.resolution_us:.3g} us)"

    @property
    def where(self) -> str:
        if not self.cpus:
            return "—"
        if len(self.cpus) == 1 or len(set(self.cpus)) == 1:
            return f"CPU {self.cpus[0]}" + (" (both)" if len(self.cpus) > 1 else "")
        return "CPUs " + ", ".join(map(str, self.cpus))


def _result(r: dict) -> OsResult:
    """One record's result: a measured summary, or, with an overhead, the difference (module note)."""
    s = r["summary"]
    before = r.get("overhead_us")
    stats = [s["median"], s["min"], s["max"], s["mean"]]
    over = res = None
    if before is not None:
        after = r.get("overhead_after_us", before)
        over = (before + after) / 2
        res = max(r["resolution_us"], abs(after - before))
        stats = [v - over if v - over > res else None for v in stats]
    return OsResult(r["label"], r["test"], r["unit"], *stats, s["n"], r.get("procs"), r.get("ws_bytes"), over, res,
                    [int(c) for c in r.get("cpus", [])] or None)


@dataclass
class NotMeasured:
    label: str
    why: str


@dataclass
class OslatSummary(Summary):
    SCHEMA = "rmax.oslat/4"
    results: list[OsResult]
    not_measured: list[NotMeasured] = field(default_factory=list)
    statistic: str = STATISTIC


@register
class Oslat(Family):
    """Operating-system latencies, lmbench style: system calls, files, signals, processes,
    context switches, pipe/AF_UNIX/UDP/TCP round trips, TCP connect and bandwidth (127.0.0.1 only)."""

    name = "oslat"
    native = ("rmax-node", "oslat")
    title = "operating-system latencies, lmbench style"
    Options = OslatOptions
    Summary = OslatSummary
    survey = SurveyPlan("operating-system latencies", 0.08, 30)
    example = "rmax bench oslat --tests null,pipe,ctxsw"

    def argv(self, o):
        return [executable("rmax-node"), "oslat", "--json", "-", "--budget", str(o.budget), "--tests",
                ",".join(o.tests)]

    def params(self, o, ctx):
        return {**super().params(o, ctx), "network": "127.0.0.1 only"}

    def timeout(self, o):
        return 3 * o.budget + 60

    def parse(self, records):
        recs = [r for r in records if r.get("schema") == "rmax.oslat/1"]
        results = [_result(r) for r in recs if r.get("validated")]
        skipped = [NotMeasured(r["label"], r["why"]) for r in records
                   if r.get("schema") == "rmax.oslat.not_measured/1"]
        summary = OslatSummary(results, skipped)
        # a difference's samples are times as measured: named so, never the difference (module note)
        samples = {r["label"] + (" (hop included)" if "overhead_us" in r else ""): r["samples"] for r in recs}
        if not recs:
            return Parsed(summary, samples, "failed", "oslat measured nothing")
        err = invalid(recs, lambda r: r["label"])
        return Parsed(summary, samples, "invalid" if err else "ok", err)

    def metrics(self, s: OslatSummary) -> list[Figure]:
        # a median below the resolution of its subtraction is no figure to compare
        out = [figure(s, ("results", i, "median"), r.label, r.label, r.unit, "median of timed batches",
                      better=r.better) for i, r in enumerate(s.results) if r.median is not None]
        return [f for f in out if f]

    def view(self, s: OslatSummary) -> View:
        t = Table(["Test", "Median", "Min", "Max", "Unit", "n", "Pinned to"],
                  [[r.label, r.shown(r.median), r.shown(r.min), r.shown(r.max), r.unit, str(r.n), r.where]
                   for r in s.results], "smaller is better except bandwidth; MB = 10^6 bytes")
        notes = ["Round trips are full round trips, with the peer pinned to a second CPU (2 CPUs: each wakeup "
                 "crosses cores) and to the measuring process's own (1 CPU: each wakeup is a context switch); "
                 "context switches are per switch, the whole ring on one CPU, with the cost of the pipe hop and "
                 "working-set read in one process subtracted (lmbench's lat_ctx method; the stored samples are the "
                 "times as measured, that cost included). A difference at or below its resolution (the subtracted "
                 "cost's interquartile range, its drift while the ring was timed, or the timer's) shows as 'below "
                 "resolution'. A 2-CPU figure waits for its peer's CPU: where other work runs there, each wakeup can "
                 "wait out that work's time slice (milliseconds), so compare it only between runs on idle CPUs. "
                 "The cache-line round trip hands one counter between the two CPUs through a shared page, no system "
                 "call: tens of nanoseconds where the cores share a cache, several times that where they do not; on "
                 "a virtual machine it changes when the host moves the vCPUs, and so do the MPI latency and "
                 "bandwidth between them."]
        notes += [f"{m.label}: not measured, {m.why}." for m in s.not_measured]
        data = [{"test": r.label, "median": r.median, "min": r.min, "max": r.max, "unit": r.unit, "n": r.n,
                 "cpus": r.cpus, "resolution_us": r.resolution_us, "below_resolution": r.median is None}
                for r in s.results]
        return View([t], notes, {"oslat": data})
