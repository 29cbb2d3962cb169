"""memlat: pointer-chasing load latency vs working-set size (native/node/memlat.c, lmbench's
lat_mem_rd method), with the plateaus found in the curve, named after a cache only where
their boundary lines up with a cache size the system reports.

The default chain is random (one cycle through the set's cache lines in random order, the
method of tinymembench and likwid's latency tests): hardware prefetchers follow a fixed
stride, which keeps lat_mem_rd's stride chain near L1 latency far past L1."""

from __future__ import annotations

from dataclasses import dataclass

import click

from rmax.inventory.caches import sysfs_levels
from rmax.model import cache_boundaries as cb
from rmax.model.cache_boundaries import Boundary, Plateau
from rmax.bench.family import Summary, SurveyPlan, option, register
from rmax.bench.node_kernel import invalid
from rmax.bench.runner import Parsed
from rmax.bench.sweep import SizeSweep, SweepFamily
from rmax.bench.view import Figure, Plot, Table, View, cell, figure
from rmax.params import Count, Seconds, Size
from rmax.sizes import human_bytes

STATISTIC = "median of timed chases (curves); minimum for plateaus and steps"


@dataclass
class MemlatOptions:
    pattern: str = option("random", "Chain: random (defeats prefetchers), fixed stride (prefetched), or both.",
                          type=click.Choice(["stride", "random", "both"]))
    stride: int = option(64, "Bytes between nodes of the stride chain.", type=Size(8, 1 << 20))
    min_size: int = option(1024, "Smallest working set.", type=Size())
    max_size: int | None = option(None, "Largest working set.", type=Size(),
                                  show="4x the last-level cache, capped by memory")
    budget: float = option(20.0, "Seconds for the sweep.", type=Seconds(0.01, 86400, lo_open=False), quick=3.0)
    points_per_octave: int = option(4, "Working sets per doubling.", type=Count(1, 64), quick=2)


@dataclass
class LatPoint:
    bytes: int
    median: float               # ns per dependent load
    min: float
    max: float
    n: int
    stride: int


@dataclass
class Level(Plateau):
    name: str = ""              # L1d, L2, L3, memory where a boundary lines up with a reported cache, else by sizes


@dataclass
class LatCurve:
    pattern: str
    points: list[LatPoint]
    steps: list[Boundary]               # significant steps only
    plateaus: list[Level]               # the levels the steps divide: one for a flat curve
    finding: str = cb.NO_BOUNDARY       # the steps in words


@dataclass
class MemlatSummary(Summary):
    SCHEMA = "rmax.memlat/3"
    curves: list[LatCurve]
    sysfs_caches: dict[str, int]
    sweep: SizeSweep
    unit: str = "ns"
    statistic: str = STATISTIC

    def curve(self, pattern: str) -> tuple[int, LatCurve] | None:
        return next(((i, c) for i, c in enumerate(self.curves) if c.pattern == pattern), None)


def name_plateaus(plateaus: list[Plateau], steps: list[Boundary], caches: dict[str, int]) -> list[Level]:
    """Name plateaus after the reported caches whose sizes line up with a measured boundary
    (cache_boundaries.aligned): the plateaus up to a boundary aligned with a cache are that
    level ("L2 (1 of 2)" for its sub-steps, e.g. TLB reach), and those after the boundary
    aligned with the largest cache are 'memory'. Plateaus after the last aligned boundary
    (when it is not the largest cache's) are named by the boundaries around them ("below 3 MiB
    boundary", "above ...", "between ... and ..."); a curve with no boundary is NO_BOUNDARY."""
    names = cb.aligned(steps, caches)
    last_cache = max(caches, key=caches.get) if caches else None

    def step_between(a: Plateau, b: Plateau) -> int | None:
        return next((k for k, st in enumerate(steps) if a.last_bytes <= st.bytes <= b.first_bytes), None)

    # groups of plateaus delimited by the boundaries that line up with a cache
    groups: list[list[int]] = [[]]
    ends: list[int | None] = []          # the aligned boundary that closes each group
    for i in range(len(plateaus)):
        groups[-1].append(i)
        k = step_between(plateaus[i], plateaus[i + 1]) if i + 1 < len(plateaus) else None
        if k is not None and k in names:
            ends.append(k)
            groups.append([])
    ends.append(None)
    out = []
    for g, (members, end) in enumerate(zip(groups, ends)):
        after_llc = g > 0 and names.get(ends[g - 1]) == last_cache
        for j, i in enumerate(members):
            p = plateaus[i]
            if end is not None or after_llc:
                level = names[end] if end is not None else "memory"
                name = level if len(members) == 1 else f"{level} ({j + 1} of {len(members)})"
            else:
                before = step_between(plateaus[i - 1], p) if i > 0 else None
                after = step_between(p, plateaus[i + 1]) if i + 1 < len(plateaus) else None
                if before is None and after is None:
                    name = cb.NO_BOUNDARY
                elif before is None:
                    name = f"below {human_bytes(steps[after].bytes)} boundary"
                elif after is None:
                    name = f"above {human_bytes(steps[before].bytes)} boundary"
                else:
                    lo, hi = human_bytes(steps[before].bytes), human_bytes(steps[after].bytes)
                    name = f"between {lo} and {hi} boundaries"
            out.append(Level(p.first_bytes, p.last_bytes, p.level, p.points, name))
    return out


def curve(pattern: str, points: list[LatPoint], caches: dict[str, int],
          samples: list[list[float]] | None = None) -> LatCurve:
    """Plateaus and significant steps of the per-size minimum latency: on a shared node other
    work (an SMT sibling sharing L1, a preempting process) only ever adds time, so the minimum is
    the curve least disturbed by it, and the one whose steps are the hardware's. The steps are
    tested against each size's samples."""
    sizes = [p.bytes for p in points]
    lat = [p.min for p in points]
    levels, steps = cb.staircase(sizes, lat, rising=True, samples=samples)
    return LatCurve(pattern, points, steps, name_plateaus(levels, steps, caches), cb.describe(steps))


@register
class Memlat(SweepFamily):
    """Load latency by pointer chasing vs working-set size (random chain; fixed stride as an
    option); the plateaus in ns, named after the caches whose sizes their boundaries match."""

    name = "memlat"
    native = ("rmax-node", "memlat")
    title = "memory load latency vs working-set size"
    Options = MemlatOptions
    Summary = MemlatSummary
    survey = SurveyPlan("memory latency staircase", 0.08, 26)
    example = "rmax bench memlat --pattern random"

    def argv(self, o):
        return self.sweep_argv(o, "--pattern", o.pattern, *(["--stride", str(o.stride)] if o.stride else []))

    def parse(self, records):
        recs = [r for r in records if r.get("schema") == "rmax.memlat/1"]
        sweep = next((r for r in records if r.get("schema") == "rmax.memlat.sweep/1"), {})
        points: dict[str, list[LatPoint]] = {}
        kept: dict[str, list[list[float]]] = {}
        for r in recs:
            if r.get("validated"):
                s = r["summary"]
                points.setdefault(r["pattern"], []).append(
                    LatPoint(r["bytes"], s["median"], s["min"], s["max"], s["n"], r["stride"]))
                kept.setdefault(r["pattern"], []).append(r["samples"])
        caches = sysfs_levels()
        summary = MemlatSummary([curve(p, pts, caches, kept[p]) for p, pts in points.items()], caches,
                                SizeSweep.of(sweep))
        samples = {f"{r['pattern']}/{r['bytes']}": r["samples"] for r in recs}
        if not recs:
            return Parsed(summary, samples, "failed", "memlat measured no working set")
        err = invalid(recs, lambda r: f"{r['pattern']}/{r['bytes']}")
        return Parsed(summary, samples, "invalid" if err else "ok", err)

    def headline(self, s: MemlatSummary) -> list[Figure]:
        """The random chain at the largest working set: a load that misses every cache (and, with
        a random chain, the prefetchers). Its minimum, as the plateaus: other work on the machine
        only adds to a chase's time (a busy point's median was 3x its minimum)."""
        found = s.curve("random")
        if not found or not found[1].points:
            return []
        i, c = found
        f = figure(s, ("curves", i, "points", len(c.points) - 1, "min"), "memory",
                   f"Memory latency (random chain, {human_bytes(c.points[-1].bytes)})", "ns",
                   "minimum of timed chases at the largest working set", better="lower", role="memory_latency",
                   at=human_bytes(c.points[-1].bytes))
        return [f] if f else []

    def metrics(self, s: MemlatSummary) -> list[Figure]:
        out = list(self.headline(s))
        for i, c in enumerate(s.curves):
            for j, lv in enumerate(c.plateaus):
                out.append(figure(s, ("curves", i, "plateaus", j, "level"), f"{c.pattern}.{lv.name}",
                                  f"{c.pattern} chain, {lv.name} plateau", "ns",
                                  "median over the plateau of the per-size minimum", better="lower"))
        return [f for f in out if f]

    def view(self, s: MemlatSummary) -> View:
        pats = [c.pattern for c in s.curves]
        by: dict[int, dict[str, LatPoint]] = {}
        for c in s.curves:
            for p in c.points:
                by.setdefault(p.bytes, {})[c.pattern] = p
        curve_rows = [[human_bytes(size)] + [cell(getattr(by[size][p], stat)) if p in by[size] else "—"
                                              for p in pats for stat in ("median", "min")] for size in sorted(by)]
        t = Table(["Working set"] + [f"{p} {stat} ns" for p in pats for stat in ("median", "min")], curve_rows,
                  "ns per dependent load vs working set")
        pl = Table(["Pattern", "Level", "From", "To", "Latency ns"],
                   [[c.pattern, lv.name, human_bytes(lv.first_bytes), human_bytes(lv.last_bytes), cell(lv.level)]
                    for c in s.curves for lv in c.plateaus],
                   "Plateaus of the minimum latency (median over each plateau)", left=2)
        notes = [f"{c.pattern} chain: {c.finding}" for c in s.curves]
        notes.append(f"Steps of the per-size minimum; {cb.RULE}; a level is named after a cache only where its "
                     "boundary lies within 2x of that cache's size.")
        if any(c.pattern == "stride" for c in s.curves):
            notes.append("The stride chain is followed by the hardware prefetchers: its latency stays low past "
                         "the caches it outgrows. The random chain is the one that shows them.")
        notes.append("sysfs: " + (", ".join(f"{k} {human_bytes(v)}" for k, v in s.sysfs_caches.items()) or "none"))
        data = [{"pattern": c.pattern, "bytes": p.bytes, "median": p.median, "min": p.min, "max": p.max, "n": p.n,
                 "stride": p.stride} for c in s.curves for p in c.points]
        return View([t, pl], notes, {"memlat": data})

    def plots(self, runs):
        series, bands, caches = {}, {}, {}
        for label, s in runs:
            caches.update({f"{k} (sysfs)": v for k, v in s.sysfs_caches.items() if v})
            for c in s.curves:
                series[f"{label} {c.pattern}"] = ([p.bytes for p in c.points], [p.median for p in c.points])
                bands[f"{label} {c.pattern}"] = ([p.min for p in c.points], [p.max for p in c.points])
        return [Plot("line", "Pointer-chasing latency", "working set (bytes)", "ns per load (median; band: min-max)",
                     series, logx=True, logy=True, vlines=caches, bands=bands)] if series else []
