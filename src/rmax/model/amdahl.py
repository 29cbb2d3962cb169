"""The generalised Amdahl model of Brown, "Maximizing Beowulf Performance" (eq. 3):

    T(N) = Ts + g(N) Tis + Tp / N + Tip          S(N) = (Ts + Tp) / T(N)

Ts is the serial time, Tp the parallelisable time, Tis the serial overhead each
added processor brings (communication, setup), Tip the extra time each processor
spends in parallel. g(N) says how the serial overhead grows:

    amdahl     g = 0    Amdahl's law itself (Tis plays no part)
    linear     g = N    each processor pays Tis in turn (Brown's figure 2)
    quadratic  g = N^2  every processor talks to every other (figure 3)

All times are in seconds (any unit works as long as it is the same for all four).
The functions take numpy arrays or scalars for n."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from rmax.errors import RmaxError

FORMS = ("amdahl", "linear", "quadratic")
# Exponent of N in the serial overhead term for each form (None: no overhead term).
GROWTH = {"amdahl": None, "linear": 1, "quadratic": 2}


@dataclass(frozen=True)
class AmdahlParams:
    ts: float
    tp: float
    tis: float = 0.0
    tip: float = 0.0
    form: str = "linear"

    def __post_init__(self):
        check_params(self.ts, self.tp, self.tis, self.tip, self.form)

    def as_dict(self) -> dict:
        return asdict(self)


def check_params(ts: float, tp: float, tis: float = 0.0, tip: float = 0.0, form: str = "linear") -> None:
    """Refuse what the model cannot mean: negative or non-finite times, an unknown form."""
    if form not in FORMS:
        raise RmaxError(f"unknown speedup model form '{form}'", hint=f"one of: {', '.join(FORMS)}")
    for name, v in (("Ts", ts), ("Tp", tp), ("Tis", tis), ("Tip", tip)):
        if not math.isfinite(v) or v < 0:
            raise RmaxError(f"{name} must be a non-negative time, not {v}")
    if ts + tp <= 0:
        raise RmaxError("Ts + Tp must be positive: there is no work to speed up")


def growth(n, form: str):
    """g(N): the factor multiplying Tis."""
    n = np.asarray(n, dtype=float)
    k = GROWTH[form]
    return np.zeros_like(n) if k is None else n ** k


def parallel_time(n, ts: float, tp: float, tis: float = 0.0, tip: float = 0.0, form: str = "linear"):
    """T(N), the model's run time on N processors."""
    n = np.asarray(n, dtype=float)
    return ts + growth(n, form) * tis + tp / n + tip


def speedup(n, ts: float, tp: float, tis: float = 0.0, tip: float = 0.0, form: str = "linear"):
    """Brown's S(N): relative to the serial program's time Ts + Tp, so S(1) < 1 whenever
    there is overhead (as in his figures)."""
    return (ts + tp) / parallel_time(n, ts, tp, tis, tip, form)


def relative_speedup(n, ts: float, tp: float, tis: float = 0.0, tip: float = 0.0, form: str = "linear"):
    """T(1) / T(N): speedup relative to the same parallel program on one processor,
    which is what a scaling measurement observes."""
    return parallel_time(1, ts, tp, tis, tip, form) / parallel_time(n, ts, tp, tis, tip, form)


def speedup_limit(ts: float, tp: float, tip: float = 0.0) -> float:
    """Amdahl's ceiling (Ts + Tp) / (Ts + Tip) as N grows without overhead; inf when nothing is serial."""
    return math.inf if ts + tip == 0 else (ts + tp) / (ts + tip)


@dataclass(frozen=True)
class BestN:
    n_continuous: float | None     # where dT/dN = 0; None when T(N) keeps falling
    n: int | None                  # the best whole number of processors (within max_n when given)
    speedup: float | None          # Brown's S at that n
    note: str

    def as_dict(self) -> dict:
        return asdict(self)


def best_n(ts: float, tp: float, tis: float = 0.0, tip: float = 0.0, form: str = "linear",
           max_n: int | None = None) -> BestN:
    """The processor count that minimises T(N).

    T is convex in N, so the continuous optimum is exact: linear N* = sqrt(Tp/Tis),
    quadratic N* = (Tp / (2 Tis))^(1/3); the best integer is one of its neighbours."""
    k = GROWTH[form]
    if k is None or tis == 0 or tp == 0:
        if tp == 0:
            return BestN(1.0, 1, float(speedup(1, ts, tp, tis, tip, form)), "nothing parallel: one processor is best")
        lim = speedup_limit(ts, tp, tip)
        note = f"no peak: speedup rises towards the Amdahl limit {lim:.4g}" if math.isfinite(lim) else \
            "no peak: speedup grows without limit (no serial time, no overhead)"
        if max_n:
            return BestN(None, max_n, float(speedup(max_n, ts, tp, tis, tip, form)), note + f"; best within {max_n} is {max_n}")
        return BestN(None, None, None, note)
    nc = (tp / (k * tis)) ** (1.0 / (k + 1))
    cands = {max(1, math.floor(nc)), max(1, math.ceil(nc))}
    if max_n:
        cands = {min(c, max_n) for c in cands}
    n = min(cands, key=lambda c: float(parallel_time(c, ts, tp, tis, tip, form)))
    note = f"T(N) is smallest at N = {nc:.4g}"
    if max_n and nc > max_n:
        note += f", beyond {max_n}: the best within range is {max_n}"
    return BestN(nc, int(n), float(speedup(n, ts, tp, tis, tip, form)), note)
