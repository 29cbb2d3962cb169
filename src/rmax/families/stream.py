"""stream: STREAM Copy, Scale, Add, Triad under STREAM's rules (native/node/stream.c):
at least ten repetitions, the first excluded, the best rate reported, every array validated."""

from __future__ import annotations

from dataclasses import dataclass

import click

from rmax.bench.family import Family, Summary, SurveyPlan, option, register
from rmax.bench.node_kernel import check_fits, invalid
from rmax.bench.runner import Parsed
from rmax.bench.view import Figure, Plot, Table, View, figure
from rmax.native import executable
from rmax.params import Count, Seconds, Size
from rmax.sizes import human_bytes
from rmax.units import BANDWIDTH

BEST = "best of repetitions, first excluded (STREAM's rule)"


@dataclass
class StreamOptions:
    size: int | None = option(None, "Bytes per array, e.g. 1GiB.", type=Size(), quick=128 * 2**20,
                              show="4x the total cache, capped by memory")
    mode: str = option("both", "One thread, all cores, or both.", type=click.Choice(["one", "all", "both"]))
    threads: int | None = option(None, "Threads of the all-core run.", type=Count(1, 4096), show="all cores")
    ntimes: int = option(10, "Repetitions at least (the first is excluded).", type=Count(10, 100000))
    budget: float = option(1.0, "Seconds of repetitions past --ntimes while the 2% target is unmet.",
                           type=Seconds(0, 86400, lo_open=False), quick=0.3)


@dataclass
class StreamResult:
    kernel: str
    threads: int
    best: float                 # MB/s (10^6 bytes per second), all threads from their common start
    median: float
    min: float
    max: float
    mean: float
    n: int                      # timed repetitions (the first excluded)
    repetitions: int
    validated: bool
    thread_best: list[float] | None = None      # each thread's own best (hpcc StarSTREAM's per-process view)
    thread_best_mean: float | None = None


@dataclass
class StreamSummary(Summary):
    SCHEMA = "rmax.stream/2"
    results: list[StreamResult]
    array_bytes: int | None = None
    total_cache_bytes: int | None = None
    rule_met: bool | None = None                # arrays of at least 4x the cache the system reports
    unit: str = BANDWIDTH          # the unit of the results' rates (rmax.units: every bandwidth's)
    statistic: str = BEST

    def result(self, kernel: str, threads: int | None = None) -> tuple[int, StreamResult] | None:
        """(index, result) of `kernel` at `threads` (default: the most threads measured)."""
        found = [(i, r) for i, r in enumerate(self.results) if r.kernel == kernel]
        if threads is not None:
            found = [(i, r) for i, r in found if r.threads == threads]
        return max(found, key=lambda ir: ir[1].threads, default=None)


def _at(s: "StreamSummary") -> str | None:
    """Arrays inside the caches measure the caches: runs pair only at the same array size."""
    return f"{human_bytes(s.array_bytes)} arrays" if s.array_bytes else None


@register
class Stream(Family):
    """STREAM Copy, Scale, Add, Triad: the best rate of at least ten repetitions, the first
    excluded, every array validated; one thread and all cores."""

    name = "stream"
    native = ("rmax-node", "stream")
    title = "STREAM Copy, Scale, Add, Triad bandwidth"
    Options = StreamOptions
    Summary = StreamSummary
    survey = SurveyPlan("STREAM memory bandwidth", 0.05, 27)
    example = "rmax bench stream --size 128MiB"

    def check(self, o, ctx):
        if o.size:
            check_fits("--size: three arrays", o.size, 3)

    def argv(self, o):
        a = [executable("rmax-node"), "stream", "--json", "-", "--mode", o.mode, "--budget", str(o.budget),
             "--ntimes", str(o.ntimes)]
        if o.size:
            a += ["--size", str(o.size)]
        if o.threads:
            a += ["--threads", str(o.threads)]
        return a

    def parse(self, records):
        recs = [r for r in records if r.get("schema") == "rmax.stream/1"]
        results = [StreamResult(r["kernel"], r["threads"], r["best_mbs"], r["summary"]["median"],
                                r["summary"]["min"], r["summary"]["max"], r["summary"]["mean"], r["summary"]["n"],
                                r["repetitions"], bool(r.get("validated")), r.get("thread_best_mbs"),
                                r.get("thread_best_mean_mbs")) for r in recs]
        r0 = recs[0] if recs else {}
        summary = StreamSummary(results, r0.get("array_bytes"), r0.get("total_cache_bytes"), r0.get("rule_met"))
        samples = {f"{r['kernel']}/{r['threads']}": r["samples"] for r in recs}
        err = invalid(recs, lambda r: f"{r['kernel']} with {r['threads']} thread(s)")
        return Parsed(summary, samples, "invalid" if err else "ok", err)

    def metrics(self, s: StreamSummary) -> list[Figure]:
        out = []
        for i, r in enumerate(s.results):
            f = figure(s, ("results", i, "best"), f"{r.kernel}.{r.threads}",
                       f"STREAM {r.kernel.capitalize()} ({r.threads} thread{'s' if r.threads != 1 else ''})",
                       BANDWIDTH, BEST, at=_at(s))
            out.append(f)
        return [f for f in out if f]

    def headline(self, s: StreamSummary) -> list[Figure]:
        found = s.result("triad")
        if not found:
            return []
        i, r = found
        f = figure(s, ("results", i, "best"), f"triad.{r.threads}",
                   f"STREAM Triad ({r.threads} thread{'s' if r.threads != 1 else ''})", BANDWIDTH, BEST,
                   role="triad", at=_at(s))
        return [f] if f else []

    def view(self, s: StreamSummary) -> View:
        t = Table(["Kernel", "Threads", "Best MB/s", "Median MB/s", "Min MB/s", "Per-thread best MB/s", "n"],
                  [[r.kernel.capitalize(), str(r.threads), f"{r.best:.0f}", f"{r.median:.0f}",
                    f"{r.min:.0f}", f"{r.thread_best_mean:.0f}" if r.thread_best_mean else "—",
                    str(r.n)] for r in s.results],
                  f"arrays of {human_bytes(s.array_bytes)}; MB = 10^6 bytes", left=1)
        notes = ["Best, median, min: all threads together, timed from their common start to the last finish; "
                 "per-thread best: each thread's own best rate, their mean (hpcc StarSTREAM's per-process view)."]
        if s.rule_met is False:
            notes.append(f"Arrays are smaller than STREAM's rule (4x the {human_bytes(s.total_cache_bytes)} of "
                         "cache the system reports): caches may hold part of them.")
        data = [{"kernel": r.kernel, "threads": r.threads, "best_MBps": r.best, "median_MBps": r.median, "n": r.n}
                for r in s.results]
        return View([t], notes, {"stream": data})

    def plots(self, runs):
        labels, values, errors = [], [], []
        for label, s in runs:
            for r in s.results:
                labels.append(f"{label} {r.kernel} x{r.threads}")
                values.append(r.best)
                errors.append((r.min, r.max))
        return [Plot("bar", "STREAM", ylabel=f"{BANDWIDTH} (best; error bar: min-max)", labels=labels, values=values,
                     errors=errors)] if labels else []
