"""Hockney's model of a message: t(n) = alpha + n / beta.

alpha is the start-up latency (seconds), beta the asymptotic bandwidth
(bytes/s) and n1/2 = alpha * beta the size at which half of beta is reached.
The fit is a weighted linear least-squares fit of t against n with weights
1/t, i.e. it minimises *relative* residuals: otherwise the large messages,
whose times are a million times longer, would decide alpha alone. The
uncertainties come from the covariance of the two linear coefficients,
propagated to beta and n1/2 to first order; the 95% intervals use Student's t
with n - 2 degrees of freedom (beta's interval is that of 1/beta, inverted).

A fit also says how well the line describes the data: a relative RMS residual
above POOR_FIT means the curve is not one line (an eager/rendezvous switch, a
cache edge), and alpha and beta then describe no single regime."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from rmax.stats import t_quantile

POOR_FIT = 0.10   # relative RMS residual above which the line describes no single regime


@dataclass(frozen=True)
class HockneyFit:
    alpha: float          # seconds
    beta: float           # bytes per second
    n_half: float         # bytes
    alpha_err: float      # one standard error each
    beta_err: float
    n_half_err: float
    points: int
    rms_rel_residual: float  # root-mean-square of (t_fit - t) / t
    alpha_ci95: tuple[float, float] = (math.nan, math.nan)
    beta_ci95: tuple[float, float] = (math.nan, math.nan)
    warnings: tuple[str, ...] = ()

    @property
    def good(self) -> bool:
        return not self.warnings

    def predict(self, n) -> np.ndarray:
        return self.alpha + np.asarray(n, dtype=float) / self.beta

    def as_dict(self) -> dict:
        d = asdict(self)
        d.update(alpha_ci95=list(self.alpha_ci95), beta_ci95=list(self.beta_ci95), warnings=list(self.warnings),
                 quality="good" if self.good else "poor")
        return d


def _warnings(alpha: float, alpha_ci, beta_ci, rms: float) -> tuple[str, ...]:
    out = []
    if rms > POOR_FIT:
        out.append(f"poor fit: relative RMS residual {rms:.2f} > {POOR_FIT:.2f}; the curve is not one line "
                   "(a protocol or cache change), so alpha and beta describe no single regime")
    if alpha <= 0:
        out.append(f"implausible alpha {alpha * 1e6:.3g} us: a start-up time cannot be zero or negative")
    elif alpha_ci[0] <= 0:
        out.append("alpha's 95% interval reaches zero: the latency is not resolved by these sizes")
    if not math.isfinite(beta_ci[1]):
        out.append("beta's 95% interval is unbounded: the sizes do not reach the bandwidth regime")
    return tuple(out)


def fit_hockney(sizes, times) -> HockneyFit:
    """Fit t(n) = alpha + n / beta to sizes (bytes) and per-message times (seconds).

    Needs at least three points with distinct sizes and positive times; raises
    ValueError otherwise, or when the data do not grow with size (no bandwidth)."""
    n = np.asarray(sizes, dtype=float)
    t = np.asarray(times, dtype=float)
    keep = np.isfinite(n) & np.isfinite(t) & (t > 0) & (n >= 0)
    n, t = n[keep], t[keep]
    if len(np.unique(n)) < 3:
        raise ValueError("a Hockney fit needs at least three distinct message sizes")
    w = 1.0 / t                      # relative residuals
    X = np.column_stack([np.ones_like(n), n]) * w[:, None]
    y = t * w
    coef, *_ = np.linalg.lstsq(X, y, rcond=None)
    a, b = float(coef[0]), float(coef[1])   # b = 1/beta
    if b <= 0:
        raise ValueError("time does not grow with message size: no bandwidth to fit")
    resid = y - X @ coef
    dof = max(len(n) - 2, 1)
    s2 = float(resid @ resid) / dof
    cov = s2 * np.linalg.inv(X.T @ X)
    va, vb, cab = float(cov[0, 0]), float(cov[1, 1]), float(cov[0, 1])
    beta = 1.0 / b
    n_half = a / b
    n_half_var = va / b**2 + (a**2 / b**4) * vb - 2 * a / b**3 * cab
    t95 = t_quantile(0.975, dof)
    sa, sb = math.sqrt(max(va, 0.0)), math.sqrt(max(vb, 0.0))
    alpha_ci = (a - t95 * sa, a + t95 * sa)
    b_hi = b + t95 * sb
    b_lo = b - t95 * sb
    beta_ci = (1.0 / b_hi, 1.0 / b_lo if b_lo > 0 else math.inf)
    rms = math.sqrt(float(resid @ resid) / len(n))
    return HockneyFit(alpha=a, beta=beta, n_half=n_half, alpha_err=sa, beta_err=sb / b**2,
                      n_half_err=math.sqrt(max(n_half_var, 0.0)), points=int(len(n)), rms_rel_residual=rms,
                      alpha_ci95=alpha_ci, beta_ci95=beta_ci, warnings=_warnings(a, alpha_ci, beta_ci, rms))
