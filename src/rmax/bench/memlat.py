"""memlat: pointer-chasing load latency vs working-set size (native/node/memlat.c, lmbench's
lat_mem_rd method), with the L1 / L2 / L3 / memory plateaus found in the curve."""

from __future__ import annotations

from dataclasses import dataclass

import click

from rmax.bench import cache_boundaries as cb
from rmax.bench.cache_boundaries import Boundary, Plateau
from rmax.bench.family import Summary, SurveyPlan, option, register
from rmax.bench.node_kernel import invalid
from rmax.bench.runner import Parsed
from rmax.bench.sweep import SizeSweep, SweepFamily
from rmax.bench.view import Figure, Plot, Table, View, cell, figure
from rmax.params import Count, Seconds, Size
from rmax.sizes import human_bytes

STATISTIC = "median of timed chases (curves); minimum for plateaus and steps"
LEVEL_STEP = 1.5  # a new level of the hierarchy is at least this much slower than the one before


@dataclass
class MemlatOptions:
    pattern: str = option("both", "Chain: fixed stride, random, or both.",
                          type=click.Choice(["stride", "random", "both"]))
    stride: int | None = option(None, "Bytes between nodes of the stride chain.", type=Size(), show="64")
    min_size: int | None = option(None, "Smallest working set.", type=Size(), show="1 KiB")
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
    name: str = ""              # L1d, L2, L3, memory; "L2 (1 of 2)" for a level's sub-steps


@dataclass
class LatCurve:
    pattern: str
    points: list[LatPoint]
    steps: list[Boundary]
    plateaus: list[Level]


@dataclass
class MemlatSummary(Summary):
    SCHEMA = "rmax.memlat/2"
    curves: list[LatCurve]
    sysfs_caches: dict[str, int]
    sweep: SizeSweep
    unit: str = "ns"
    statistic: str = STATISTIC

    def curve(self, pattern: str) -> tuple[int, LatCurve] | None:
        return next(((i, c) for i, c in enumerate(self.curves) if c.pattern == pattern), None)


def name_plateaus(plateaus: list[Plateau], caches: dict[str, int], max_bytes: int | None) -> list[Level]:
    """Name plateaus after the hierarchy: consecutive plateaus within LEVEL_STEP of each other
    are one level (a level's sub-steps, e.g. TLB reach inside L2); levels take the reported
    cache names in order (L1d, L2, L3); the last level is 'memory' when there are more levels
    than caches, or when the sweep went past the largest reported cache."""
    groups: list[list[Plateau]] = []
    for p in plateaus:
        if groups and p.level < LEVEL_STEP * groups[-1][0].level:
            groups[-1].append(p)
        else:
            groups.append([p])
    names = [n for n in caches if n.startswith("L")]
    beyond = bool(caches) and max_bytes is not None and max_bytes > max(caches.values())
    level_names = []
    for i in range(len(groups)):
        last = i == len(groups) - 1
        level_names.append("memory" if i >= len(names) or (last and i > 0 and beyond) else names[i])
    # several levels beyond the caches (a transition seen as its own plateau) are one memory level
    if level_names.count("memory") > 1:
        first = level_names.index("memory")
        groups = groups[:first] + [[p for g in groups[first:] for p in g]]
        level_names = level_names[:first] + ["memory"]
    out = []
    for name, g in zip(level_names, groups):
        for j, p in enumerate(g):
            out.append(Level(p.first_bytes, p.last_bytes, p.level, p.points,
                             name if len(g) == 1 else f"{name} ({j + 1} of {len(g)})"))
    return out


def curve(pattern: str, points: list[LatPoint], caches: dict[str, int], max_bytes: int | None) -> LatCurve:
    """Plateaus and steps of the per-size minimum latency: on a shared node other work (an SMT
    sibling sharing L1, a preempting process) only ever adds time, so the minimum is the
    curve least disturbed by it, and the one whose steps are the hardware's."""
    sizes = [p.bytes for p in points]
    lat = [p.min for p in points]
    levels = cb.plateaus(sizes, lat, rising=True)
    return LatCurve(pattern, points, cb.boundaries(sizes, lat, rising=True), name_plateaus(levels, caches, max_bytes))


@register
class Memlat(SweepFamily):
    """Load latency by pointer chasing vs working-set size (fixed stride and random chain);
    the L1, L2, L3 and memory plateaus in ns."""

    name = "memlat"
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
        for r in recs:
            if r.get("validated"):
                s = r["summary"]
                points.setdefault(r["pattern"], []).append(
                    LatPoint(r["bytes"], s["median"], s["min"], s["max"], s["n"], r["stride"]))
        caches = cb.sysfs_levels()
        last = max((p.bytes for pts in points.values() for p in pts), default=None)
        summary = MemlatSummary([curve(p, pts, caches, last) for p, pts in points.items()], caches,
                                SizeSweep.of(sweep))
        samples = {f"{r['pattern']}/{r['bytes']}": r["samples"] for r in recs}
        if not recs:
            return Parsed(summary, samples, "failed", "memlat measured no working set")
        err = invalid(recs, lambda r: f"{r['pattern']}/{r['bytes']}")
        return Parsed(summary, samples, "invalid" if err else "ok", err)

    def headline(self, s: MemlatSummary) -> list[Figure]:
        """The random chain at the largest working set: a load that misses every cache (and, with
        a random chain, the prefetchers)."""
        found = s.curve("random")
        if not found or not found[1].points:
            return []
        i, c = found
        f = figure(s, ("curves", i, "points", len(c.points) - 1, "median"), "memory",
                   f"Memory latency (random chain, {human_bytes(c.points[-1].bytes)})", "ns",
                   "median of timed chases at the largest working set", better="lower", role="memory_latency")
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
        notes = [f"{c.pattern}: boundaries at {', '.join(human_bytes(b.bytes) for b in c.steps) or 'none'}"
                 for c in s.curves]
        notes.append("sysfs: " + (", ".join(f"{k} {human_bytes(v)}" for k, v in s.sysfs_caches.items()) or "none"))
        data = [{"pattern": c.pattern, "bytes": p.bytes, "median": p.median, "min": p.min, "max": p.max, "n": p.n,
                 "stride": p.stride} for c in s.curves for p in c.points]
        return View([t, pl], notes, {"memlat": data})

    def plots(self, runs):
        series, caches = {}, {}
        for label, s in runs:
            caches.update({f"{k} (sysfs)": v for k, v in s.sysfs_caches.items() if v})
            for c in s.curves:
                series[f"{label} {c.pattern}"] = ([p.bytes for p in c.points], [p.median for p in c.points])
        return [Plot("line", "Pointer-chasing latency", "working set (bytes)", "ns per load (median)", series,
                     logx=True, logy=True, vlines=caches)] if series else []
