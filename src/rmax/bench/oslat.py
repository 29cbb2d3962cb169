"""oslat: operating-system latencies after lmbench (native/node/oslat*.c): system calls, files,
signals, processes, context switches, pipe/AF_UNIX/UDP/TCP round trips, TCP connect and
bandwidth, over 127.0.0.1 only."""

from __future__ import annotations

from dataclasses import dataclass

from rmax.bench.family import Family, Summary, SurveyPlan, option, register
from rmax.bench.node_kernel import invalid
from rmax.bench.runner import Parsed
from rmax.bench.view import Figure, Table, View, cell, figure
from rmax.native import executable
from rmax.params import Names, Seconds

TESTS = ("null", "stat", "open-close", "sig-install", "sig-catch", "fork-exit", "fork-exec", "pipe", "unix", "ctxsw",
         "udp", "tcp", "tcp-connect", "tcp-bw")
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
    median: float
    min: float
    max: float
    mean: float
    n: int
    procs: int | None = None            # ctxsw: processes in the ring
    ws_bytes: int | None = None         # ctxsw: bytes each process reads between switches
    overhead_us: float | None = None    # ctxsw: the pipe hop and working-set read subtracted

    @property
    def better(self) -> str:
        return "higher" if self.unit == "MB/s" else "lower"


@dataclass
class OslatSummary(Summary):
    SCHEMA = "rmax.oslat/2"
    results: list[OsResult]
    statistic: str = STATISTIC


@register
class Oslat(Family):
    """Operating-system latencies, lmbench style: system calls, files, signals, processes,
    context switches, pipe/AF_UNIX/UDP/TCP round trips, TCP connect and bandwidth (127.0.0.1 only)."""

    name = "oslat"
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
        results = []
        for r in recs:
            if r.get("validated"):
                s = r["summary"]
                results.append(OsResult(r["label"], r["test"], r["unit"], s["median"], s["min"], s["max"], s["mean"],
                                        s["n"], r.get("procs"), r.get("ws_bytes"), r.get("overhead_us")))
        samples = {r["label"]: r["samples"] for r in recs}
        if not recs:
            return Parsed(OslatSummary(results), samples, "failed", "oslat measured nothing")
        err = invalid(recs, lambda r: r["label"])
        return Parsed(OslatSummary(results), samples, "invalid" if err else "ok", err)

    def metrics(self, s: OslatSummary) -> list[Figure]:
        out = [figure(s, ("results", i, "median"), r.label, r.label, r.unit, "median of timed batches",
                      better=r.better) for i, r in enumerate(s.results)]
        return [f for f in out if f]

    def view(self, s: OslatSummary) -> View:
        t = Table(["Test", "Median", "Min", "Max", "Unit", "n"],
                  [[r.label, cell(r.median, ".3f"), cell(r.min, ".3f"), cell(r.max, ".3f"), r.unit, str(r.n)]
                   for r in s.results], "smaller is better except bandwidth; MB = 10^6 bytes")
        notes = ["Round trips are full round trips; context switches are per switch, with the cost of the pipe "
                 "hop and working-set read in one process subtracted (lmbench's method)."]
        data = [{"test": r.label, "median": r.median, "min": r.min, "max": r.max, "unit": r.unit, "n": r.n}
                for r in s.results]
        return View([t], notes, {"oslat": data})
