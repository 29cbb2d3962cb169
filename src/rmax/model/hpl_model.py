"""HPL's time model (the scalability analysis in HPL's documentation, netlib.org/benchmark/hpl), plus
one calibrated term for what that analysis leaves out.

    T(N) = 2 gamma3 N^3 / (3 P Q)                        the trailing updates, all at DGEMM speed
         + beta_d N^2 (3P + Q) / (2 P Q)                  panel broadcasts and row swaps (bandwidth)
         + alpha N ((NB + 1) log2(P) + P) / NB            their start-up costs (latency)
         + overhead                                       calibrated, one of the OVERHEADS forms

Units: alpha in seconds per message, beta as the Hockney model and `rmax bench net`
give it, a bandwidth in bytes/s (the analysis wants seconds per double:
beta_d = 8 / beta), gamma3 in seconds per flop of one process's DGEMM.

What the analysis omits: it charges every flop at DGEMM speed and every column
of the panel factorisation only its messages. Two forms of the missing time are
offered, each with one coefficient fitted to measured HPL runs (`calibrate`):
- "panel": the panel's N^2 NB / 2 flops (done by one process column) at kappa
  times the DGEMM cost per flop, kappa dimensionless. Right when the panel is on
  the critical path (DEPTH 0, slow BLAS-2).
- "column": tau seconds per matrix column. Right when look-ahead hides the
  panel's flops behind the update and what remains is per-column work that
  cannot be hidden (pivot search and row exchange, synchronisation, the
  iteration's waits): the missing time then grows like N, not N^2.
The calibration fits both and keeps the one with the smaller median leave-one-out
error, so the choice is made by predictions, not by the fit to the same runs.
A zero coefficient is the analysis's model unchanged.

Still omitted: DGEMM's lower speed on the thin shapes of late iterations, the
solve's O(N^2) work, load imbalance of the block-cyclic layout, and contention
when several ranks share a node's memory bandwidth."""

from __future__ import annotations

import math
import re
import statistics
from dataclasses import asdict, dataclass
from typing import Callable

from rmax.errors import MissingData, RmaxError

BYTES_PER_DOUBLE = 8


def hpl_flops(n: float) -> float:
    """HPL's operation count, the one its GFLOPS are computed from."""
    return 2.0 / 3.0 * n ** 3 + 1.5 * n ** 2


def n_for_flops(flops: float) -> float:
    """The N whose run takes about `flops` (hpl_flops' leading term inverted)."""
    return (flops / (2.0 / 3.0)) ** (1 / 3)


def check_inputs(n: float, nb: int, p: int, q: int, alpha: float, beta: float, gamma3: float) -> None:
    if n < 1:
        raise RmaxError(f"N must be at least 1, not {n}")
    if nb < 1:
        raise RmaxError(f"NB must be at least 1, not {nb}")
    if p < 1 or q < 1:
        raise RmaxError(f"the process grid {p} x {q} needs P and Q of at least 1")
    for name, v, strict in (("alpha", alpha, False), ("beta", beta, True), ("gamma3", gamma3, True)):
        if not math.isfinite(v) or v < 0 or (strict and v == 0):
            raise RmaxError(f"{name} must be {'positive' if strict else 'non-negative'}, not {v}")


# --- the calibrated overhead term --------------------------------------------------------

@dataclass(frozen=True)
class OverheadForm:
    name: str
    symbol: str
    unit: str
    meaning: str
    unit_time: Callable[[float, int, int, int, float], float]   # (n, nb, p, q, gamma3) -> s for coefficient 1


OVERHEADS: dict[str, OverheadForm] = {f.name: f for f in (
    OverheadForm("panel", "kappa", "x DGEMM time per flop", "panel factorisation flops at kappa x the DGEMM cost",
                 lambda n, nb, p, q, g: g * n ** 2 * nb / (2.0 * p)),
    OverheadForm("column", "tau", "s per column", "tau seconds per matrix column that look-ahead cannot hide",
                 lambda n, nb, p, q, g: float(n)),
)}


@dataclass(frozen=True)
class Overhead:
    """One form of the missing time with its coefficient (0: the reference's model)."""
    form: str = "panel"
    value: float = 0.0

    def __post_init__(self):
        if self.form not in OVERHEADS:
            raise RmaxError(f"unknown overhead form '{self.form}'", hint=f"one of: {', '.join(OVERHEADS)}")
        if not math.isfinite(self.value) or self.value < 0:
            sym = OVERHEADS[self.form].symbol
            raise RmaxError(f"{sym} must be non-negative, not {self.value}")

    def time(self, n: float, nb: int, p: int, q: int, gamma3: float) -> float:
        return self.value * OVERHEADS[self.form].unit_time(n, nb, p, q, gamma3) if self.value else 0.0

    def describe(self) -> str:
        f = OVERHEADS[self.form]
        return f"{f.symbol} = {self.value:.3g} {f.unit} ({f.meaning})" if self.value else "none (the reference's model)"

    def as_dict(self) -> dict:
        f = OVERHEADS[self.form]
        return {"form": self.form, "symbol": f.symbol, "value": self.value, "unit": f.unit}


REFERENCE = Overhead()


@dataclass(frozen=True)
class HplTerms:
    compute_s: float     # 2 gamma3 N^3 / (3PQ)
    bandwidth_s: float   # beta_d N^2 (3P+Q) / (2PQ)
    latency_s: float     # alpha N ((NB+1) log2 P + P) / NB
    overhead_s: float    # the calibrated term (Overhead.time)

    @property
    def total_s(self) -> float:
        return self.compute_s + self.bandwidth_s + self.latency_s + self.overhead_s

    def as_dict(self) -> dict:
        return {**asdict(self), "total_s": self.total_s}


def hpl_terms(n: float, nb: int, p: int, q: int, alpha: float, beta: float, gamma3: float,
              overhead: Overhead = REFERENCE) -> HplTerms:
    check_inputs(n, nb, p, q, alpha, beta, gamma3)
    beta_d = BYTES_PER_DOUBLE / beta
    return HplTerms(
        compute_s=2.0 * gamma3 * n ** 3 / (3.0 * p * q),
        bandwidth_s=beta_d * n ** 2 * (3 * p + q) / (2.0 * p * q),
        latency_s=alpha * n * ((nb + 1) * math.log2(p) + p) / nb,
        overhead_s=overhead.time(n, nb, p, q, gamma3),
    )


def predict_hpl(n: float, nb: int, p: int, q: int, alpha: float, beta: float, gamma3: float,
                overhead: Overhead = REFERENCE) -> float:
    """Predicted HPL wall time in seconds (the tuner's entry point).

    alpha: s per message; beta: bytes/s; gamma3: s per DGEMM flop of one process;
    overhead: the calibrated term (default none: the reference's model)."""
    return hpl_terms(n, nb, p, q, alpha, beta, gamma3, overhead).total_s


Range = tuple[float, float]


def time_interval(n: float, nb: int, p: int, q: int, alpha: Range, beta: Range, gamma3: Range, form: str,
                  coefficient: Range) -> Range:
    """The predicted time's bounds when each input lies in its range (lo, hi): T grows with alpha, gamma3
    and the overhead coefficient and falls with beta, so its bounds are at two corners of the box. Every
    input at its worst together: the bounds are wide, never narrower than the inputs allow."""
    b_hi = min(beta[1], 1e300)   # a bandwidth the measurement could not bound above: its term 0
    lo = predict_hpl(n, nb, p, q, alpha[0], b_hi, gamma3[0], Overhead(form, coefficient[0]))
    hi = predict_hpl(n, nb, p, q, alpha[1], beta[0], gamma3[1], Overhead(form, coefficient[1]))
    return lo, hi


def measured_time(n: int, gflops: float | None, time_s: float) -> float:
    """A test's time from its GFLOPS when it has them: HPL prints seconds with two decimals
    (0.01 s at N = 500) but GFLOPS with five significant digits."""
    if isinstance(gflops, (int, float)) and gflops > 0:
        return hpl_flops(n) / (gflops * 1e9)
    return float(time_s)


def predicted_gflops(n: float, seconds: float) -> float:
    return hpl_flops(n) / seconds / 1e9


def efficiency(terms: HplTerms) -> float:
    """Fraction of the DGEMM-bound time: 1 / (1 + the other terms / compute), as in the reference."""
    return terms.compute_s / terms.total_s


# --- sizes and grids ------------------------------------------------------------------

GRID = re.compile(r"^\s*(\d+)\s*[xX*]\s*(\d+)\s*$")


def parse_grid(text: str) -> tuple[int, int]:
    m = GRID.match(text or "")
    if not m:
        raise RmaxError(f"malformed grid '{text}'", hint="write it as PxQ, e.g. 2x4")
    p, q = int(m.group(1)), int(m.group(2))
    if p < 1 or q < 1:
        raise RmaxError(f"grid '{text}': P and Q must be at least 1")
    return p, q


def square_grid(ranks: int) -> tuple[int, int]:
    """The most square P x Q = ranks with P <= Q (the reference's advice for most networks)."""
    if ranks < 1:
        raise RmaxError(f"a process grid needs at least 1 rank, not {ranks}")
    p = int(math.isqrt(ranks))
    while ranks % p:
        p -= 1
    return p, ranks // p


def n_for_memory(total_bytes: float, nb: int, p: int = 1, q: int = 1, fraction: float = 0.8) -> int:
    """The largest N whose 8 N^2 bytes fit in `fraction` of the memory, a multiple of NB x lcm(P, Q)
    so every process holds whole blocks (HPL's tuning notes: N a multiple of NB, and of P and Q)."""
    if total_bytes <= 0:
        raise RmaxError(f"memory must be positive, not {total_bytes} bytes")
    n = int(math.sqrt(fraction * total_bytes / BYTES_PER_DOUBLE))
    step = nb * math.lcm(p, q)
    if n >= step:
        return n - n % step
    return max(nb, n - n % nb) if n >= nb else max(n, 1)


# --- calibration of the overhead term ----------------------------------------------------

@dataclass(frozen=True)
class Observation:
    """One measured HPL test with the machine rates that held when it ran."""
    n: int
    nb: int
    p: int
    q: int
    time_s: float
    alpha: float
    beta: float
    gamma3: float


@dataclass(frozen=True)
class FormFit:
    overhead: Overhead
    stderr: float | None
    rms_rel_error: float            # on the runs it was fitted to
    loo_median_abs_error: float | None  # leave-one-out: each run predicted by a fit to the others


@dataclass(frozen=True)
class Calibration:
    overhead: Overhead              # the chosen form and its coefficient
    stderr: float | None
    points: int
    rms_rel_error: float            # of the chosen form on the points it was fitted to
    rms_rel_error_uncalibrated: float
    fits: dict[str, FormFit]        # every form tried
    chosen_by: str
    warnings: tuple[str, ...] = ()  # a poor fit, an undetermined or implausible coefficient

    def interval(self) -> Range | None:
        """The coefficient's 95% interval (Student's t on points - 1 degrees of freedom, cut at 0);
        None when its standard error is unknown (fewer than 2 tests)."""
        if self.stderr is None or self.points < 2:
            return None
        from rmax.stats import t_quantile

        half = t_quantile(0.975, self.points - 1) * self.stderr
        return max(0.0, self.overhead.value - half), self.overhead.value + half

    def as_dict(self) -> dict:
        return {"overhead": self.overhead.as_dict(), "stderr": self.stderr, "points": self.points,
                "interval": list(self.interval() or []) or None,
                "rms_rel_error": self.rms_rel_error, "rms_rel_error_uncalibrated": self.rms_rel_error_uncalibrated,
                "chosen_by": self.chosen_by, "warnings": list(self.warnings),
                "forms": {k: {**f.overhead.as_dict(), "stderr": f.stderr, "rms_rel_error": f.rms_rel_error,
                              "loo_median_abs_error": f.loo_median_abs_error} for k, f in self.fits.items()}}


def _rms(xs: list[float]) -> float:
    return math.sqrt(sum(x * x for x in xs) / len(xs))


def _fit_coefficient(form: str, obs: list[Observation]) -> tuple[float, float | None, list[float]]:
    """Least squares on relative errors, (T_model - t) / t, for the form's one coefficient >= 0:
    (coefficient, its standard error, the relative errors)."""
    unit = OVERHEADS[form].unit_time
    base = [predict_hpl(o.n, o.nb, o.p, o.q, o.alpha, o.beta, o.gamma3) for o in obs]
    u = [unit(o.n, o.nb, o.p, o.q, o.gamma3) for o in obs]
    t = [o.time_s for o in obs]
    sxx = sum((ui / ti) ** 2 for ui, ti in zip(u, t))
    sxy = sum((ti - bi) * ui / ti ** 2 for ti, bi, ui in zip(t, base, u))
    c = max(0.0, sxy / sxx) if sxx > 0 else 0.0
    rel = [(bi + c * ui - ti) / ti for bi, ui, ti in zip(base, u, t)]
    dof = len(obs) - 1
    stderr = math.sqrt(sum(r * r for r in rel) / dof / sxx) if dof > 0 and sxx > 0 else None
    return c, stderr, rel


def fit_form(form: str, obs: list[Observation]) -> FormFit:
    c, stderr, rel = _fit_coefficient(form, obs)
    loo = None
    if len(obs) >= 3:
        errs = []
        for i, o in enumerate(obs):
            ci, _, _ = _fit_coefficient(form, obs[:i] + obs[i + 1:])
            pred = predict_hpl(o.n, o.nb, o.p, o.q, o.alpha, o.beta, o.gamma3, Overhead(form, ci))
            errs.append(abs(pred - o.time_s) / o.time_s)
        loo = statistics.median(errs)
    return FormFit(Overhead(form, c), stderr, _rms(rel), loo)


def calibrate(obs: list[Observation], forms: list[str] | None = None) -> Calibration:
    """Fit every overhead form (or the ones named) and keep the best predictor: the smallest
    median leave-one-out error when there are at least 3 runs, else the smallest fitted error.
    The median, because timing noise is one-sided and bursty (a run preempted once is much
    slower, never faster): one such run must not choose the form."""
    if not obs:
        raise MissingData("no measured HPL runs to calibrate the model's overhead term from",
                        hint="run `rmax hpl run` at a few N first, or give the coefficient (--kappa or --tau)")
    fits = {f: fit_form(f, obs) for f in (forms or list(OVERHEADS))}
    by_loo = len(obs) >= 3
    best = min(fits.values(), key=lambda f: f.loo_median_abs_error if by_loo else f.rms_rel_error)
    rel0 = [(predict_hpl(o.n, o.nb, o.p, o.q, o.alpha, o.beta, o.gamma3) - o.time_s) / o.time_s for o in obs]
    return Calibration(best.overhead, best.stderr, len(obs), best.rms_rel_error, _rms(rel0), fits,
                       "median leave-one-out error" if by_loo else "fitted error (fewer than 3 runs)",
                       calibration_warnings(best, obs))


# Limits past which a calibration is reported as doubtful: the fit's error, the coefficient's
# relative standard error, and the share of the modelled time left to the overhead term.
POOR_FIT = 0.15
UNDETERMINED = 0.5
MOSTLY_OVERHEAD = 0.5


def calibration_warnings(fit: FormFit, obs: list[Observation]) -> tuple[str, ...]:
    """Why a calibrated model should not be trusted, if it should not."""
    out = []
    o = fit.overhead
    sym = OVERHEADS[o.form].symbol
    if len(obs) < 3:
        # one coefficient through one or two tests fits them (nearly) exactly: its error says nothing
        out.append(f"calibrated on only {len(obs)} HPL test(s): {sym} has no uncertainty and its rms error "
                   "proves nothing; predictions beyond those N are untested (run `rmax hpl run` at 3 or more N)")
    if fit.rms_rel_error > POOR_FIT:
        out.append(f"poor fit: rms error {fit.rms_rel_error:.0%} over {len(obs)} test(s)")
    if o.value and fit.stderr is not None and fit.stderr > UNDETERMINED * o.value:
        out.append(f"{sym} is poorly determined: {o.value:.3g} ± {fit.stderr:.2g} (one standard error)")
    shares = []
    for x in obs:
        extra = o.time(x.n, x.nb, x.p, x.q, x.gamma3)
        total = predict_hpl(x.n, x.nb, x.p, x.q, x.alpha, x.beta, x.gamma3, o)
        shares.append((extra / total if total > 0 else 0.0, x.n))
    worst, n = max(shares) if shares else (0.0, 0)
    if worst > MOSTLY_OVERHEAD:
        out.append(f"implausible {sym} = {o.value:.3g}: the overhead term is {worst:.0%} of the modelled time at "
                   f"N={n}, so the measured rates do not explain these runs (were alpha, beta and the DGEMM rate "
                   f"measured where the tests ran?)")
    return tuple(out)
