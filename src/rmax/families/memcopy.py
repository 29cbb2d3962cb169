"""memcopy: memcpy bandwidth vs buffer size (native/node/memcopy.c), after the memcopy benchmark of
"Linux Clusters at NIST". A copy of B bytes touches 2B (source and destination): boundaries are reported in
working-set bytes."""

from __future__ import annotations

from dataclasses import dataclass

from rmax.inventory.caches import sysfs_levels
from rmax.model import cache_boundaries as cb
from rmax.model.cache_boundaries import Boundary, Plateau
from rmax.bench.family import Summary, SurveyPlan, option, register
from rmax.bench.node_kernel import invalid
from rmax.bench.runner import Parsed
from rmax.bench.sweep import SizeSweep, SweepFamily
from rmax.bench.view import Figure, Plot, Table, View, cell, figure, sweep_at
from rmax.params import Count, Seconds, Size
from rmax.sizes import human_bytes

STATISTIC = "median of timed blocks (points), maximum for steps; MB = 10^6 bytes copied"


@dataclass
class MemcopyOptions:
    min_size: int = option(1024, "Smallest buffer.", type=Size())
    max_size: int | None = option(None, "Largest buffer.", type=Size(),
                                  show="4x the last-level cache, capped by memory")
    budget: float = option(10.0, "Seconds for the sweep.", type=Seconds(0.01, 86400, lo_open=False), quick=2.0)
    points_per_octave: int = option(4, "Buffer sizes per doubling.", type=Count(1, 64), quick=2)


@dataclass
class CopyPoint:
    bytes: int                  # buffer size (the working set is twice this)
    median: float               # MB/s copied
    min: float
    max: float
    n: int


@dataclass
class MemcopySummary(Summary):
    SCHEMA = "rmax.memcopy/3"
    points: list[CopyPoint]
    steps_working_set: list[Boundary]   # significant steps only
    plateaus_working_set: list[Plateau]
    sysfs_caches: dict[str, int]
    sweep: SizeSweep
    finding: str = cb.NO_BOUNDARY       # the steps in words
    unit: str = "MB/s"
    statistic: str = STATISTIC


@register
class Memcopy(SweepFamily):
    """memcpy bandwidth vs buffer size (after NIST's memcopy benchmark), MB/s = 10^6 bytes copied per second."""

    name = "memcopy"
    native = ("rmax-node", "memcopy")
    title = "memcpy bandwidth vs buffer size"
    Options = MemcopyOptions
    Summary = MemcopySummary
    survey = SurveyPlan("memcpy bandwidth vs size", 0.05, 29)
    example = "rmax bench memcopy --max-size 64MiB"

    fits_what = "--max-size: source and destination"

    def copies(self, o):
        return 2

    def argv(self, o):
        return self.sweep_argv(o)

    def parse(self, records):
        recs = [r for r in records if r.get("schema") == "rmax.memcopy/1"]
        sweep = next((r for r in records if r.get("schema") == "rmax.memcopy.sweep/1"), {})
        good = [r for r in recs if r.get("validated")]
        points = [CopyPoint(r["bytes"], r["summary"]["median"], r["summary"]["min"], r["summary"]["max"],
                            r["summary"]["n"]) for r in good]
        ws = [2 * p.bytes for p in points]
        rates = [p.max for p in points]  # the least disturbed by other work on the node, as memlat's minimum
        levels, steps = cb.staircase(ws, rates, samples=[r["samples"] for r in good])
        summary = MemcopySummary(points, steps, levels, sysfs_levels(), SizeSweep.of(sweep), cb.describe(steps))
        samples = {str(r["bytes"]): r["samples"] for r in recs}
        if not recs:
            return Parsed(summary, samples, "failed", "memcopy measured no buffer size")
        err = invalid(recs, lambda r: f"{r['bytes']} bytes")
        return Parsed(summary, samples, "invalid" if err else "ok", err)

    def metrics(self, s: MemcopySummary) -> list[Figure]:
        if not s.points:
            return []
        j = max(range(len(s.points)), key=lambda k: s.points[k].median)
        last = len(s.points) - 1
        out = [figure(s, ("points", j, "median"), "best", f"memcpy bandwidth, best ({human_bytes(s.points[j].bytes)})",
                      "MB/s", "median of timed blocks at the fastest size", at=sweep_at([p.bytes for p in s.points])),
               figure(s, ("points", last, "median"), "largest",
                      f"memcpy bandwidth, largest buffer ({human_bytes(s.points[last].bytes)})", "MB/s",
                      "median of timed blocks at the largest size", at=human_bytes(s.points[last].bytes))]
        return [f for f in out if f]

    def view(self, s: MemcopySummary) -> View:
        t = Table(["Buffer", "Median MB/s", "Min MB/s", "Max MB/s", "n"],
                  [[human_bytes(p.bytes), cell(p.median, ".0f"), cell(p.min, ".0f"), cell(p.max, ".0f"), str(p.n)]
                   for p in s.points], "memcpy bandwidth vs buffer size; MB = 10^6 bytes copied")
        notes = [f"Bandwidth vs working set (source + destination): {s.finding}; sysfs: "
                 + (", ".join(f"{k} {human_bytes(v)}" for k, v in s.sysfs_caches.items()) or "none"),
                 f"Steps of the per-size maximum; {cb.RULE}."]
        data = [{"bytes": p.bytes, "median": p.median, "min": p.min, "max": p.max, "n": p.n} for p in s.points]
        return View([t], notes, {"memcopy": data})

    def plots(self, runs):
        series, bands, caches = {}, {}, {}
        for label, s in runs:
            caches.update({f"{k} (sysfs)": v for k, v in s.sysfs_caches.items() if v})
            series[label] = ([p.bytes for p in s.points], [p.median / 1e3 for p in s.points])
            bands[label] = ([p.min / 1e3 for p in s.points], [p.max / 1e3 for p in s.points])
        return [Plot("line", "memcpy bandwidth vs buffer size", "buffer size (bytes)", "GB/s (median; band: min-max)",
                     series, logx=True, vlines=caches, bands=bands)] if series else []
