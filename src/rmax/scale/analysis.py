"""From the samples of a scaling study to speedup, Karp-Flatt and the fitted model.

Strong scaling (fixed work): speedup S(p) = median T(1) / median T(p); the
generalised Amdahl model is fitted to every sample's time (not to the medians)
so the repeats' scatter weighs each point.

Weak scaling (work grows with p): time is not comparable across p, the rate is;
the scaled speedup is median rate(p) / median rate(1) (Gustafson's view), and
Amdahl's fixed-work model is not fitted. Karp-Flatt is shown for both; for weak
scaling it is computed from the scaled speedup and read as the fraction of the
run that did not scale.

A user command's points (`command_summary`) are timed by the program's own region
when every point printed one, else by their wall time minus the empty launch
paired with each (rmax.scale.run), else by their whole wall time."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from rmax.model.amdahl_fit import fit_scaling
from rmax.model.karp_flatt import karp_flatt
from rmax.scale.counts import powers_of_two
from rmax.stats import summarize


@dataclass
class Sample:
    ranks: int
    time_s: float
    n: int | None = None            # HPL problem size
    gflops: float | None = None
    run_id: str | None = None


@dataclass(frozen=True)
class Point:
    """One launch of a user's program and what was timed around it."""
    ranks: int
    wall_s: float                       # the whole launch
    run_id: str
    region_s: float | None = None       # the slowest rank's own region (rmax.scale.region)
    launch_s: float | None = None       # the empty launch just before it at the same count
    launch_id: str | None = None


def _points(samples: list[Sample], weak: bool) -> list[dict]:
    by: dict[int, list[Sample]] = defaultdict(list)
    for s in samples:
        by[s.ranks].append(s)
    base = by.get(1)
    t1 = summarize([s.time_s for s in base]).median if base else None
    r1 = summarize([s.gflops for s in base if s.gflops]).median if base and weak else None
    points = []
    for p in sorted(by):
        ss = by[p]
        ts = summarize([s.time_s for s in ss])
        rates = [s.gflops for s in ss if s.gflops]
        rs = summarize(rates) if rates else None
        if weak:
            sp = rs.median / r1 if rs and r1 else None
        else:
            sp = t1 / ts.median if t1 else None
        points.append({"ranks": p, "n": ss[0].n, "runs": len(ss), "run_ids": [s.run_id for s in ss if s.run_id],
                       "time_s": ts.as_dict(),
                       "gflops": rs.as_dict() if rs else None,
                       "speedup": sp, "speedup_statistic": ("median rate(p) / median rate(1)" if weak
                                                            else "median T(1) / median T(p)"),
                       "efficiency": sp / p if sp else None,
                       "karp_flatt": karp_flatt(sp, p) if sp else None})
    return points


def analyse(samples: list[Sample], weak: bool = False, max_n: int | None = None) -> dict:
    """Points, and for strong scaling the model fits, the chosen form, best N and the curve beyond."""
    points = _points(samples, weak)
    out: dict = {"mode": "weak" if weak else "strong", "points": points}
    if weak:
        out["fit"] = None
        out["fit_note"] = "weak scaling: the fixed-work Amdahl model does not apply; see the scaled speedup"
        return out
    measured_max = max(p["ranks"] for p in points)
    horizon = max_n or max(64, 8 * measured_max)
    sel = fit_scaling([s.ranks for s in samples], [s.time_s for s in samples], max_n=horizon)
    out["fit"] = sel.as_dict()
    if sel.chosen:
        ns = [k for k in powers_of_two(horizon)]
        out["curve"] = [{"ranks": k, "time_s": float(sel.chosen.time(k)), "speedup": float(sel.chosen.relative_speedup(k)),
                         "measured": k <= measured_max} for k in ns]
    return out


def _launch_overheads(points: list[Point]) -> dict[str, dict]:
    """Per count: the empty launches' wall times (their spread, run ids)."""
    by: dict[int, list[Point]] = defaultdict(list)
    for p in points:
        if p.launch_s is not None:
            by[p.ranks].append(p)
    return {str(k): {**summarize([p.launch_s for p in v]).as_dict(), "runs": [p.launch_id for p in v]}
            for k, v in sorted(by.items())}


def command_summary(points: list[Point], keep_launch: bool, empty_name: str, max_n: int | None = None) -> dict:
    """The analysis of a user command's points, with what their time is (module note)."""
    walls = [Sample(p.ranks, p.wall_s, run_id=p.run_id) for p in points]
    regions = [p.region_s for p in points]
    over = _launch_overheads(points)
    if keep_launch:
        out = analyse(walls, max_n=max_n)
        out["time_statistic"] = "wall time of the launch (launcher start-up included)"
    elif all(r is not None for r in regions):
        out = analyse([Sample(p.ranks, p.region_s, run_id=p.run_id) for p in points], max_n=max_n)
        out["time_statistic"] = ("the program's own region (its rmax-region-seconds line), the slowest rank's; "
                                 "launch and teardown are outside it")
    else:
        net = [Sample(p.ranks, p.wall_s - p.launch_s, run_id=p.run_id) for p in points if p.launch_s is not None]
        by: dict[int, list[float]] = defaultdict(list)
        for s in net:
            by[s.ranks].append(s.time_s)
        if not net or min(min(float(np.mean(v)), summarize(v).median) for v in by.values()) <= 0:
            out = analyse(walls, max_n=max_n)
            out["warning"] = ("the program ran no longer than an empty launch at some count, so its own time "
                              "cannot be told from the launcher's; the times shown include start-up "
                              "(print an rmax-region-seconds line from the program to time its own part)")
        else:
            out = analyse(net, max_n=max_n)
            out["time_statistic"] = (f"wall time of the launch minus that of the empty job ({empty_name}) launched "
                                     f"the same way just before it: the launch's spread is in the fit's errors")
    if not keep_launch and any(r is not None for r in regions) and not all(r is not None for r in regions):
        partial = (f"only {sum(r is not None for r in regions)} of {len(points)} launches printed an "
                   f"rmax-region-seconds line, so the regions were not used")
        out["warning"] = "; ".join(w for w in (partial, out.get("warning")) if w)
    if over:
        out["launch_overhead_s"] = over
    return out


def curve_arrays(fit_dict: dict, horizon: int):
    """The chosen fit's relative speedup at every N up to horizon (for plots)."""
    from rmax.model.amdahl import relative_speedup

    chosen = next(f for f in fit_dict["fits"] if f["form"] == fit_dict["chosen"])
    p = chosen["params"]
    ns = np.arange(1, horizon + 1)
    return ns, relative_speedup(ns, p["ts"], p["tp"], p.get("tis", 0.0), 0.0, chosen["form"])
