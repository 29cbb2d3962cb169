"""Fitting the generalised Amdahl model to measured times, and choosing its form.

T(N) = c + Tis g(N) + Tp / N is linear in its parameters, so the bounded fit
(every time >= 0) is a non-negative least-squares problem, solved exactly: with
at most three parameters, the least-squares fit on each subset of them (the
others held at 0) whose coefficients are all >= 0, the one of least residual.
No starting guess, no local minima.

What timings can and cannot tell apart: Ts and Tip both add the same constant
to every T(N), so only their sum is identifiable; the fit reports it as Ts and
sets Tip = 0 (say so wherever it is shown).

Weights: each sample is weighted by the scatter of the repeats at its N (the
sample standard deviation, floored at 1% of the mean so that three lucky
repeats cannot claim near-infinite weight). Without repeats the scatter is
assumed to be 1% of the time (relative errors: times span decades), the
covariance is scaled by the residuals, and reduced chi^2 says nothing absolute.
A sample may be zero or negative (a difference of two noisy times: rmax scale's
program minus its empty launch); each N's mean must be positive.

Intervals: each parameter's 95% interval is estimate +- t x standard error. The
standard errors rest on scatters estimated from a few repeats, so t is Student's
at the Welch-Satterthwaite degrees of freedom of that parameter (each N's
scatter counts with its repeats - 1, weighted by its share of the parameter's
variance): with 3 repeats t is about 2.5-4, not 2. When the model misses the
means by more than their scatter (reduced chi^2 above 1) the errors grow by
sqrt(chi^2/dof). A parameter's interval is cut at 0, its bound.

Form selection: Akaike's criterion with the small-sample correction (AICc);
a form with more parameters must beat a simpler one by more than 2 to be chosen."""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field

import numpy as np

from rmax.errors import RmaxError
from rmax.model.amdahl import FORMS, BestN, best_n, growth, parallel_time, relative_speedup
from rmax.stats import t_quantile

LEVEL = 0.95                # of the parameters' intervals
PARAMS = {"amdahl": ("ts", "tp"), "linear": ("ts", "tp", "tis"), "quadratic": ("ts", "tp", "tis")}
SIGMA_FLOOR = 0.01          # relative: the least scatter a timing is credited with
AIC_MARGIN = 2.0            # how much better a form with more parameters must be


@dataclass
class Fit:
    form: str
    params: dict[str, float]            # ts (including Tip), tp, tis
    stderr: dict[str, float | None]     # one standard error from the covariance
    interval: dict[str, list[float] | None]   # LEVEL interval of each parameter (module note), None: unknown
    interval_dof: dict[str, float | None]     # the degrees of freedom of its t quantile
    covariance: list[list[float]]
    r2: float | None                    # weighted R^2 of the times (None when saturated)
    chi2: float
    chi2_red: float | None              # chi^2 / dof; None without degrees of freedom
    aicc: float
    dof: int
    n_samples: int
    sigma_source: str
    best: BestN | None = None
    best_n_stderr: float | None = None
    # As many distinct rank counts as parameters: the curve goes through every count's mean,
    # so R^2 and chi2/dof test nothing (left None) and its predictions beyond them are untested.
    saturated: bool = False

    def time(self, n):
        p = self.params
        return parallel_time(n, p["ts"], p["tp"], p.get("tis", 0.0), 0.0, self.form)

    def relative_speedup(self, n):
        p = self.params
        return relative_speedup(n, p["ts"], p["tp"], p.get("tis", 0.0), 0.0, self.form)

    def as_dict(self) -> dict:
        d = asdict(self)
        d["best"] = self.best.as_dict() if self.best else None
        return d


@dataclass
class Selection:
    fits: list[Fit]
    chosen: Fit | None
    reason: str
    skipped: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"chosen": self.chosen.form if self.chosen else None, "reason": self.reason,
                "fits": [f.as_dict() for f in self.fits], "skipped": self.skipped}


def _design(n: np.ndarray, form: str) -> np.ndarray:
    cols = [np.ones_like(n), 1.0 / n]
    if form != "amdahl":
        cols.append(growth(n, form))
    return np.column_stack(cols)


def _groups(n: np.ndarray, t: np.ndarray) -> dict[float, list[float]]:
    """The times at each N."""
    groups: dict[float, list[float]] = defaultdict(list)
    for ni, ti in zip(n, t):
        groups[float(ni)].append(float(ti))
    return groups


def sigmas(n: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, bool, str]:
    """Per-sample scatter from the repeats at each N (see the module note)."""
    groups = _groups(n, t)
    if all(len(v) >= 2 for v in groups.values()):
        sd = {k: max(float(np.std(v, ddof=1)), SIGMA_FLOOR * float(np.mean(v))) for k, v in groups.items()}
        return np.array([sd[float(ni)] for ni in n]), True, "sd of repeats at each N (floor 1% of the mean)"
    means = {k: float(np.mean(v)) for k, v in groups.items()}
    return np.array([SIGMA_FLOOR * means[float(ni)] for ni in n]), False, "assumed 1% of each time (no repeats)"


def _intervals(n: np.ndarray, a: np.ndarray, w: np.ndarray, cov: np.ndarray, coef: np.ndarray, names,
               absolute: bool, dof: int, chi2: float) -> tuple[dict, dict]:
    """Each parameter's LEVEL interval and the degrees of freedom of its t quantile (module note)."""
    inflate = math.sqrt(max(1.0, chi2 / dof)) if absolute and dof > 0 else 1.0
    # the estimate is linear in the samples: coef = C t, so each N's repeats add C_i^2 sigma_i^2 to its variance
    c = cov @ (a * (w * w)[:, None]).T if np.all(np.isfinite(cov)) else None
    reps = Counter(float(ni) for ni in n)
    out, dofs = {}, {}
    for j, nm in enumerate(names):
        var = cov[j, j]
        if c is None or not math.isfinite(var) or var < 0:
            out[nm], dofs[nm] = None, None
            continue
        if absolute:
            parts: dict[float, float] = defaultdict(float)
            for i, ni in enumerate(n):
                parts[float(ni)] += (c[j, i] / w[i]) ** 2
            den = sum(v * v / (reps[k] - 1) for k, v in parts.items())
            nu = sum(parts.values()) ** 2 / den if den > 0 else math.inf
        else:
            nu = float(dof)
        if not nu > 0:
            out[nm], dofs[nm] = None, None
            continue
        half = t_quantile(0.5 + LEVEL / 2, nu) * math.sqrt(var) * inflate
        out[nm] = [max(0.0, float(coef[j]) - half), float(coef[j]) + half]
        dofs[nm] = float(nu)
    return out, dofs


def _nnls(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """min |a x - b| over x >= 0, exactly (module note): the optimum is the least-squares fit on its
    own free columns, so it is the best of the fits on every subset whose coefficients are >= 0."""
    k = a.shape[1]
    best, best_r = np.zeros(k), float(b @ b)
    for mask in range(1, 1 << k):
        cols = [j for j in range(k) if mask >> j & 1]
        x, *_ = np.linalg.lstsq(a[:, cols], b, rcond=None)
        if np.all(x >= 0):
            r = b - a[:, cols] @ x
            if float(r @ r) < best_r:
                best, best_r = np.zeros(k), float(r @ r)
                best[cols] = x
    return best


def fit_form(n, t, form: str, sigma=None, absolute: bool = True, sigma_source: str = "given",
             max_n: int | None = None) -> Fit:
    """Fit one form to samples (n_i, t_i) with scatter sigma_i."""
    n, t = np.asarray(n, dtype=float), np.asarray(t, dtype=float)
    sigma = np.ones_like(t) if sigma is None else np.asarray(sigma, dtype=float)
    a = _design(n, form)
    w = 1.0 / sigma
    coef = _nnls(a * w[:, None], t * w)
    resid = (t - a @ coef) * w
    chi2 = float(resid @ resid)
    k, m = a.shape[1], len(t)
    dof = m - k
    # Covariance of a linear least-squares fit; for a parameter held at its bound 0
    # it is the unconstrained approximation.
    try:
        cov = np.linalg.inv((a * w[:, None]).T @ (a * w[:, None]))
    except np.linalg.LinAlgError:
        cov = np.full((k, k), np.nan)
    if not absolute:
        cov = cov * (chi2 / dof if dof > 0 else np.nan)
    mean_w = float(np.sum(t * w * w) / np.sum(w * w))
    ss_tot = float(np.sum(((t - mean_w) * w) ** 2))
    r2 = 1.0 - chi2 / ss_tot if ss_tot > 0 else 1.0
    if absolute:
        aic = chi2 + 2 * k                         # Gaussian likelihood with known scatter
    else:
        aic = m * math.log(max(chi2, 1e-300) / m) + 2 * k
    aicc = aic + (2 * k * (k + 1) / (m - k - 1) if m - k - 1 > 0 else math.inf)
    names = PARAMS[form]
    # Column order of the design is (ts, tp, tis); names follow it.
    params = {nm: float(v) for nm, v in zip(names, coef)}
    stderr = {nm: (float(math.sqrt(cov[i, i])) if math.isfinite(cov[i, i]) and cov[i, i] >= 0 else None)
              for i, nm in enumerate(names)}
    interval, interval_dof = _intervals(n, a, w, cov, coef, names, absolute, dof, chi2)
    fit = Fit(form, params, stderr, interval, interval_dof, cov.tolist(), r2, chi2, chi2 / dof if dof > 0 else None,
              aicc, dof, m, sigma_source)
    fit.best = best_n(params["ts"], params["tp"], params.get("tis", 0.0), 0.0, form, max_n=max_n)
    fit.best_n_stderr = _best_n_stderr(fit)
    return fit


def _best_n_stderr(fit: Fit) -> float | None:
    """Delta method: propagate the parameter covariance through N*(params) by a numerical gradient."""
    if fit.best is None or fit.best.n_continuous is None or fit.form == "amdahl":
        return None
    if min(fit.params.values()) <= 0:   # a parameter held at its bound: the linearisation means nothing
        return None
    names = PARAMS[fit.form]
    x = np.array([fit.params[k] for k in names])
    cov = np.array(fit.covariance)
    if not np.all(np.isfinite(cov)):
        return None

    def nstar(v):
        b = best_n(max(v[0], 0.0), max(v[1], 0.0), max(v[2], 1e-300), 0.0, fit.form)
        return b.n_continuous if b.n_continuous is not None else math.nan

    grad = np.zeros(len(x))
    for i in range(len(x)):
        h = max(abs(x[i]) * 1e-6, 1e-12)
        up, dn = x.copy(), x.copy()
        up[i] += h
        dn[i] = max(dn[i] - h, 0.0)
        grad[i] = (nstar(up) - nstar(dn)) / (up[i] - dn[i])
    var = float(grad @ cov @ grad)
    return math.sqrt(var) if math.isfinite(var) and var >= 0 else None


def fit_scaling(n, t, forms=FORMS, max_n: int | None = None) -> Selection:
    """Fit every form that the data can determine and choose one by AICc."""
    n, t = np.asarray(n, dtype=float), np.asarray(t, dtype=float)
    if len(n) != len(t) or len(n) == 0:
        raise RmaxError("a scaling fit needs the same, non-zero number of rank counts and times")
    if np.any(n < 1) or not np.all(np.isfinite(t)) or min(np.mean(v) for v in _groups(n, t).values()) <= 0:
        raise RmaxError("a scaling fit needs rank counts >= 1, finite times and a positive mean time at each count")
    sigma, absolute, source = sigmas(n, t)
    distinct = len(set(n.tolist()))
    fits, skipped = [], {}
    for form in forms:
        k = len(PARAMS[form])
        if distinct < k:
            skipped[form] = f"needs at least {k} distinct rank counts, {distinct} measured"
            continue
        if len(t) <= k and not absolute:
            skipped[form] = f"needs more than {k} samples to estimate the scatter"
            continue
        fit = fit_form(n, t, form, sigma, absolute, source, max_n=max_n)
        if distinct == k:
            fit.saturated, fit.r2, fit.chi2_red = True, None, None
        fits.append(fit)
    if not fits:
        return Selection([], None, "no form could be fitted: " + "; ".join(f"{k}: {v}" for k, v in skipped.items()),
                         skipped)
    chosen = _choose(fits)
    others = [f for f in fits if f is not chosen]
    reason = f"lowest AICc ({chosen.aicc:.4g})" if others else "the only form the data can determine"
    if others:
        reason += "; " + ", ".join(f"{f.form} {f.aicc:.4g}" for f in others)
        if len(PARAMS[chosen.form]) < max(len(PARAMS[f.form]) for f in fits):
            reason += f" (a form with more parameters must be lower by more than {AIC_MARGIN:g})"
    return Selection(fits, chosen, reason, skipped)


def _choose(fits: list[Fit]) -> Fit:
    """Lowest AICc, but a form with more parameters must win by AIC_MARGIN over a simpler one."""
    best = min(fits, key=lambda f: f.aicc)
    for f in sorted(fits, key=lambda f: len(PARAMS[f.form])):
        if len(PARAMS[f.form]) < len(PARAMS[best.form]) and f.aicc - best.aicc <= AIC_MARGIN:
            return f
    return best
