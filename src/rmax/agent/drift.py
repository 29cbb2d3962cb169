"""Drift: is a rate worse than the node's own baseline by more than its noise?

The latest `recent` values are tested against the `history` values before them with a one-sided
Mann-Whitney U test (rmax.stats.shifted): a significance test over the node's own spread, so a
noisy rate needs a larger drop to be flagged than a steady one. A significant shift is drift only
when the recent median is also worse than the baseline by at least `min_change` (a fraction): a
baseline taken over a few quiet minutes understates how a shared node's rates wander over hours,
and the rank test's smallest p-value (all recent values below all baseline values) needs no size
at all (an untouched node's dgemm 7 % below its baseline, p = 0.006, in a suite run). The
baseline shown is the median of those earlier values, while learning too (fewer of them than a
verdict needs); before there are any, it is NaN, not the latest values' own median."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from rmax.stats import robust_sd, shifted


@dataclass
class Verdict:
    latest: float
    baseline: float          # median of the earlier values (nan while there are none)
    noise: float             # robust spread of those values (1.4826 x MAD), same unit
    deviation: float         # latest / baseline - 1 (negative: lower than usual)
    p_value: float           # nan while learning
    state: str               # learning | steady | drift
    n_baseline: int

    @property
    def drift(self) -> bool:
        return self.state == "drift"


def judge(values: list[float], higher_is_better: bool, recent: int, history: int, min_history: int,
          alpha: float, min_change: float) -> Verdict:
    """The verdict on a series of values, oldest first (at least one)."""
    latest = values[-1]
    now, before = values[-recent:], values[:-recent][-history:]
    learning = len(before) < min_history
    baseline = statistics.median(before) if before else math.nan
    noise = robust_sd(before) if before else math.nan
    deviation = latest / baseline - 1 if baseline else math.nan
    if learning:
        return Verdict(latest, baseline, noise, deviation, math.nan, "learning", len(before))
    flagged, p = shifted(now, before, "lower" if higher_is_better else "higher", alpha)
    flagged = flagged and worse_by(statistics.median(now), baseline, higher_is_better) >= min_change
    return Verdict(latest, baseline, noise, deviation, p, "drift" if flagged else "steady", len(before))


def worse_by(value: float, reference: float, higher_is_better: bool) -> float:
    """How much worse `value` is than `reference`, as a fraction of it (negative: better)."""
    change = value / reference - 1
    return -change if higher_is_better else change
