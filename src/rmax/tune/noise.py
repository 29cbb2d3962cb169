"""Noise-aware comparison: is a challenger really better than the incumbent?

Blind HPL runs give "very non-deterministic results" (Richard et al., I-Cluster), and the machine
may be shared. So a single fast run never makes a new best: a promising
challenger is measured again, alternating with the incumbent so that a drift in
machine load hits both, until Welch's t-test separates their means at 95% or
the repeat cap is reached. Only a significant gain counts. A challenger that is
clearly slower after one run is not repeated: repeats are spent where they can
change a decision."""

from __future__ import annotations

import math
from dataclasses import dataclass

from rmax.stats import differ_significantly, summarize
from rmax.tune.evaluator import BudgetExhausted, Duel, Evaluator

DEFAULT_CAP = 3          # samples per challenger (and per incumbent, per duel)
DEFAULT_CV = 0.03        # run-to-run noise assumed until it has been measured
MIN_SCREEN_CV = 0.01


@dataclass
class Verdict:
    better: bool             # significantly better than the incumbent
    invalid: bool            # the challenger failed or FAILED its residual check
    mean: float | None
    incumbent_mean: float | None
    p_value: float = math.nan
    samples: int = 0
    screened: bool = False   # dropped as clearly worse before any test (see _clearly_worse)
    unfinished: bool = False  # the budget ran out before a decision: not kept


def noise_cv(ev: Evaluator, min_dof: int = 1) -> float | None:
    """Run-to-run noise measured so far: the pooled coefficient of variation of every
    candidate measured at least twice (None before `min_dof` degrees of freedom)."""
    num = den = 0.0
    for samples in ev._samples.values():
        if len(samples) >= 2:
            s = summarize(samples)
            if s.mean > 0:
                num += (s.sd / s.mean) ** 2 * (s.n - 1)
                den += s.n - 1
    return math.sqrt(num / den) if den >= min_dof else None


def _clearly_worse(mean: float, inc_mean: float, cv: float) -> bool:
    # More than three standard deviations of run-to-run noise below: another run would not save it.
    return mean < inc_mean * (1 - 3 * cv)


def challenge(ev: Evaluator, cand: dict, incumbent: dict, cap: int = DEFAULT_CAP, label: str = "") -> Verdict:
    """Measure cand against incumbent (already measured at least once) as described above. Every
    strategy's duels pass through here, so here each one is recorded for the steps table
    (rmax.tune.steps), `label` naming a duel of the session's own (the confirmation at full N)."""
    try:
        v = _duel(ev, cand, incumbent, cap)
    except BudgetExhausted:
        a, b = ev.samples(cand), ev.samples(incumbent)
        if a or ev.known_bad(cand):     # measured, then the budget ran out before a decision
            p = differ_significantly(a, b)[1]
            ev.duels.append(Duel(dict(incumbent), dict(cand),
                                 Verdict(False, ev.known_bad(cand), sum(a) / len(a) if a else None,
                                         sum(b) / len(b) if b else None, p, len(a), unfinished=True),
                                 len(b), label))
        raise
    ev.duels.append(Duel(dict(incumbent), dict(cand), v, len(ev.samples(incumbent)), label))
    return v


def _duel(ev: Evaluator, cand: dict, incumbent: dict, cap: int) -> Verdict:
    g = ev.sample(cand)
    if g is None:
        return Verdict(False, True, None, ev.mean(incumbent), samples=1)
    # A noise estimate from a couple of repeats can be far too small, and a too-small one would
    # discard real gains after one unlucky run: screen with the assumed noise until 8 degrees
    # of freedom are pooled, and never with less than a floor.
    cv = max(noise_cv(ev, min_dof=8) or DEFAULT_CV, MIN_SCREEN_CV)
    while True:
        a, b = ev.samples(cand), ev.samples(incumbent)
        ma, mb = sum(a) / len(a), sum(b) / len(b)
        if _clearly_worse(ma, mb, cv):
            return Verdict(False, False, ma, mb, samples=len(a), screened=True)
        sig, p = differ_significantly(a, b)
        if sig:
            return Verdict(ma > mb, False, ma, mb, p, len(a))
        if len(a) >= cap and len(b) >= cap:
            return Verdict(False, False, ma, mb, p, len(a))
        # Alternate: the side with fewer samples runs next (the incumbent first on a tie,
        # since it was measured longest ago).
        if len(b) <= len(a) and len(b) < cap:
            if ev.sample(incumbent) is None:        # the incumbent itself went bad: the challenger wins
                return Verdict(True, False, ma, None, samples=len(a))
        elif len(a) < cap:
            if ev.sample(cand) is None:
                return Verdict(False, True, None, mb, samples=len(a) + 1)
        else:
            return Verdict(False, False, ma, mb, p, len(a))
