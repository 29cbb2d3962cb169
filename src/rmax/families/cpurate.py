"""cpurate: floating-point rate vs vector length (native/node/cpurate.c), Robert G. Brown's
cpu-rate ("Maximizing Beowulf Performance"), with the cache boundaries it reveals, from the
rate and from its run-to-run spread (which peaks where page placement decides whether a
vector fits a cache)."""

from __future__ import annotations

from dataclasses import dataclass

import click

from rmax.inventory.caches import sysfs_levels
from rmax.model import cache_boundaries as cb
from rmax.model.cache_boundaries import Boundary, Plateau
from rmax.bench.family import Summary, SurveyPlan, option, register
from rmax.bench.node_kernel import invalid
from rmax.bench.runner import Parsed
from rmax.bench.sweep import SweepFamily
from rmax.bench.view import Figure, Plot, Table, View, cell, figure, sweep_at
from rmax.params import Count, Seconds, Size
from rmax.sizes import human_bytes

STATISTIC = "median, mean and sd of timed blocks per length"
FLAT = 1.25   # a curve whose fastest length is within this factor of its slowest reads as flat


@dataclass
class CpurateOptions:
    # about a fifth of a 3-minute node survey; 4 s with coarser steps and fewer samples in the quick one
    budget: float = option(35.0, "Seconds for the whole sweep; it stops at the length that would overrun it.",
                           type=Seconds(0.01, 86400, lo_open=False), quick=4.0)
    precision: str = option("both", "Precision.", type=click.Choice(["double", "single", "both"]))
    kernel: str = option("multiply", "x=(1+x)(1.5-x)*x, or Brown's x=(1+x)(1.5-x)/x, whose divide bounds the rate "
                         "below cache bandwidth on wide cores (a flat curve).",
                         type=click.Choice(["multiply", "divide"]))
    min_size: int = option(1024, "Shortest vector, e.g. 1K.", type=Size())
    max_size: int | None = option(None, "Longest vector, e.g. 1GiB.", type=Size(),
                                  show="4x the last-level cache, capped by memory")
    reps: int = option(30, "Samples per length, at least.", type=Count(2, 100000), quick=10)
    points_per_octave: int = option(4, "Lengths per doubling.", type=Count(1, 64), quick=2)


@dataclass
class RatePoint:
    bytes: int
    median: float               # GFLOPS, empty loop subtracted
    mean: float
    sd: float
    n: int
    min: float
    max: float
    passes: int
    empty_loop_s: float

    @property
    def rel_sd(self) -> float | None:
        return self.sd / self.mean if self.mean else None


@dataclass
class RateCurve:
    precision: str
    points: list[RatePoint]
    rate_steps: list[Boundary]          # significant steps of the median rate, half-way (in log) between plateaus
    plateaus: list[Plateau]             # the levels the steps divide: one for a flat curve
    spread_peaks: list[int]             # lengths in bytes where the relative SD peaks significantly
    finding: str = cb.NO_BOUNDARY       # the steps in words: "no boundary found" or "boundaries at ..."


@dataclass
class CpurateSweep:
    lengths_measured: int | None = None
    lengths_planned: int | None = None
    max_size: int | None = None
    llc_bytes: int | None = None
    stopped_by: str | None = None
    seconds: float | None = None


@dataclass
class CpurateSummary(Summary):
    SCHEMA = "rmax.cpurate/3"
    curves: list[RateCurve]
    sysfs_caches: dict[str, int]
    sweep: CpurateSweep
    kernel: str = "multiply"            # multiply, or Brown's divide
    unit: str = "GFLOPS"
    statistic: str = STATISTIC


def curve(precision: str, points: list[RatePoint], samples: list[list[float]] | None = None) -> RateCurve:
    """One precision's curve with its boundaries: significant steps of the median rate (tested
    against each length's samples), significant peaks of the relative SD."""
    sizes = [p.bytes for p in points]
    rate = [p.median for p in points]
    spread = [p.rel_sd if p.rel_sd is not None else float("nan") for p in points]
    levels, steps = cb.staircase(sizes, rate, samples=samples)
    return RateCurve(precision, points, steps, levels, cb.spread_peaks(sizes, spread, [p.n for p in points]),
                     cb.describe(steps))


@register
class Cpurate(SweepFamily):
    """Brown's cpu-rate: x = (1+x)(1.5-x)*x (by default; Brown's /x with --kernel divide) over
    vectors of growing length, GFLOPS, empty loop subtracted; cache boundaries from the rate
    and from its spread. The divide's throughput bounds Brown's kernel below cache
    bandwidth on a wide core, so its curve is flat through the caches; the multiply shows them."""

    name = "cpurate"
    native = ("rmax-node", "cpurate")
    title = "floating-point rate vs vector length; cache boundaries"
    Options = CpurateOptions
    Summary = CpurateSummary
    survey = SurveyPlan("CPU rate vs vector length", 0.12, 25)
    example = "rmax bench cpurate --quick"

    def copies(self, o):
        return 4 if o.max_size <= 64 * 2**20 else 1   # short vectors are kept several times over (working copies)

    def argv(self, o):
        return self.sweep_argv(o, "--precision", o.precision, "--kernel", o.kernel, "--reps", str(o.reps))

    def parse(self, records):
        recs = [r for r in records if r.get("schema") == "rmax.cpurate/1"]
        sweep = next((r for r in records if r.get("schema") == "rmax.cpurate.sweep/1"), {})
        points: dict[str, list[RatePoint]] = {}
        kept: dict[str, list[list[float]]] = {}
        for r in recs:
            s = r["summary"] or {}
            if r.get("validated"):
                points.setdefault(r["precision"], []).append(
                    RatePoint(r["bytes"], s["median"], s["mean"], s["sd"], s["n"], s["min"], s["max"], r["passes"],
                              r["empty_loop_s"]))
                kept.setdefault(r["precision"], []).append(r["samples"])
        summary = CpurateSummary([curve(p, pts, kept[p]) for p, pts in points.items()], sysfs_levels(),
                                 CpurateSweep(**{k: sweep.get(k) for k in CpurateSweep.__dataclass_fields__}),
                                 next((r["kernel"] for r in recs), "multiply"))
        samples = {f"{r['precision']}/{r['bytes']}": r["samples"] for r in recs}
        if not recs:
            return Parsed(summary, samples, "failed", "cpurate measured no vector length")
        err = invalid(recs, lambda r: f"{r['precision']}/{r['bytes']}")
        return Parsed(summary, samples, "invalid" if err else "ok", err)

    def metrics(self, s: CpurateSummary) -> list[Figure]:
        out = []
        for i, c in enumerate(s.curves):
            if c.points:
                j = max(range(len(c.points)), key=lambda k: c.points[k].median)
                out.append(figure(s, ("curves", i, "points", j, "median"), f"{c.precision}.best",
                                  f"CPU rate, {c.precision} (fastest length, {human_bytes(c.points[j].bytes)})",
                                  "GFLOPS", "median of timed blocks at the fastest length",
                                  at=sweep_at([p.bytes for p in c.points])))
        return [f for f in out if f]

    def view(self, s: CpurateSummary) -> View:
        precs = [c.precision for c in s.curves]
        by_size: dict[int, dict[str, RatePoint]] = {}
        for c in s.curves:
            for p in c.points:
                by_size.setdefault(p.bytes, {})[c.precision] = p
        rows = []
        for size in sorted(by_size):
            row = [human_bytes(size)]
            for prec in precs:
                p = by_size[size].get(prec)
                row += [cell(p.median), cell(100 * p.rel_sd if p.rel_sd is not None else None, ".1f"), str(p.n)] \
                    if p else ["—", "—", "—"]
            rows.append(row)
        rate = Table(["Length"] + [c for p in precs for c in (f"{p} median GFLOPS", f"{p} SD/mean %", "n")], rows,
                     "GFLOPS vs vector length")
        sysfs = ", ".join(f"{k} {human_bytes(v)}" for k, v in s.sysfs_caches.items()) or "none"
        bounds = Table(["Source"] + precs, [
            ["significant rate steps (half-way between plateaus)"] + [c.finding for c in s.curves],
            ["significant peaks of the relative SD"] + [", ".join(human_bytes(x) for x in c.spread_peaks)
                                                        or "none" for c in s.curves],
            ["sysfs (per instance)"] + [sysfs] * len(precs)], "Cache boundaries: measured vs reported by sysfs")
        sw = s.sweep
        notes = [f"Sweep: {sw.lengths_measured} of {sw.lengths_planned} lengths up to {human_bytes(sw.max_size)}, "
                 f"ended by {sw.stopped_by} after {cell(sw.seconds, '.1f')} s. Rates are medians of timed blocks; "
                 f"SD/mean is the run-to-run spread; {cb.RULE}; {cb.SPREAD_RULE}."]
        notes += [f"{c.precision}: {c.finding}" for c in s.curves]
        notes.append(f"Kernel: {s.kernel} (x=(1+x)(1.5-x){'/' if s.kernel == 'divide' else '*'}x, 4 flops per "
                     "element).")
        for c in s.curves:
            rates = [p.median for p in c.points if p.median]
            if c.rate_steps or not rates:
                continue
            lo, hi = min(rates), max(rates)
            if hi <= FLAT * lo:
                notes.append(f"{c.precision}: the rate is flat ({lo:.3g}-{hi:.3g} GFLOPS): the kernel's arithmetic"
                             + (" (the divide's throughput)" if s.kernel == "divide" else "")
                             + ", not the memory hierarchy, bounds it at every measured length, so the caches are "
                             "not visible here; memlat and memcopy measure them directly.")
            else:
                notes.append(f"{c.precision}: the rate varies ({lo:.3g}-{hi:.3g} GFLOPS) but no step passes the rule "
                             "above (too noisy or too few lengths on a side); memlat and memcopy measure the caches "
                             "directly.")
        data = [{"precision": c.precision, "bytes": p.bytes, "median": p.median, "mean": p.mean, "sd": p.sd, "n": p.n,
                 "min": p.min, "max": p.max} for c in s.curves for p in c.points]
        return View([rate, bounds], notes, {"cpurate": data})

    def plots(self, runs):
        rate, band, spread, caches = {}, {}, {}, {}
        for label, s in runs:
            caches.update({f"{k} (sysfs)": v for k, v in s.sysfs_caches.items() if v})
            for c in s.curves:
                xs = [p.bytes for p in c.points]
                rate[f"{label} {c.precision}"] = (xs, [p.median for p in c.points])
                band[f"{label} {c.precision}"] = ([p.min for p in c.points], [p.max for p in c.points])
                spread[f"{label} {c.precision}"] = (xs, [p.sd for p in c.points])
        if not rate:
            return []
        return [Plot("line", "Rate vs vector length", "vector length (bytes)", "GFLOPS (median; band: min-max)", rate,
                     logx=True, vlines=caches, bands=band),
                Plot("line", "Run-to-run spread: its peaks mark the boundaries", "vector length (bytes)",
                     "GFLOPS (sd over repetitions)", spread, logx=True, vlines=caches)]
