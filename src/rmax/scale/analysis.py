"""From the samples of a scaling study to speedup, Karp-Flatt and the fitted model.

Strong scaling (fixed work): speedup S(p) = median T(1) / median T(p); the
generalised Amdahl model is fitted to every sample's time (not to the medians)
so the repeats' scatter weighs each point.

Weak scaling (work grows with p): time is not comparable across p, the rate is;
the scaled speedup is median rate(p) / median rate(1) (Gustafson's view), and
Amdahl's fixed-work model is not fitted. Karp-Flatt is shown for both; for weak
scaling it is computed from the scaled speedup and read as the fraction of the
run that did not scale."""

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


def curve_arrays(fit_dict: dict, horizon: int):
    """The chosen fit's relative speedup at every N up to horizon (for plots)."""
    from rmax.model.amdahl import relative_speedup

    chosen = next(f for f in fit_dict["fits"] if f["form"] == fit_dict["chosen"])
    p = chosen["params"]
    ns = np.arange(1, horizon + 1)
    return ns, relative_speedup(ns, p["ts"], p["tp"], p.get("tis", 0.0), 0.0, chosen["form"])
