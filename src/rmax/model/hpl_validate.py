"""How well the HPL model predicts measured runs.

Every run is predicted twice: by the reference's model (no overhead term) and with
the overhead term calibrated on the *other* runs (leave-one-out), so no run is
predicted by a fit that saw it. The error is (predicted - measured) / measured
on time; a GFLOPS error is the same size with the opposite sign."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from rmax.model.hpl_model import Observation, calibrate, hpl_flops, predict_hpl


@dataclass(frozen=True)
class Check:
    n: int
    nb: int
    p: int
    q: int
    measured_s: float
    measured_gflops: float
    gamma3: float
    predicted_s: float            # reference model, no overhead term
    error: float                  # relative, on time
    overhead: dict | None         # form and coefficient, calibrated on the other runs
    calibrated_s: float | None
    calibrated_error: float | None

    def as_dict(self) -> dict:
        return asdict(self)


def validate(obs: list[Observation], fit_on=None) -> list[Check]:
    """Predict each observation; `fit_on(o)` chooses which other runs may calibrate the
    overhead term (default: all the others)."""
    checks = []
    for i, o in enumerate(obs):
        raw = predict_hpl(o.n, o.nb, o.p, o.q, o.alpha, o.beta, o.gamma3)
        others = [x for j, x in enumerate(obs) if j != i and (fit_on is None or fit_on(x))]
        over = cal = cal_err = None
        if others:
            fitted = calibrate(others).overhead
            over = fitted.as_dict()
            cal = predict_hpl(o.n, o.nb, o.p, o.q, o.alpha, o.beta, o.gamma3, fitted)
            cal_err = (cal - o.time_s) / o.time_s
        checks.append(Check(o.n, o.nb, o.p, o.q, o.time_s, hpl_flops(o.n) / o.time_s / 1e9, o.gamma3, raw,
                            (raw - o.time_s) / o.time_s, over, cal, cal_err))
    return checks


def summarize_errors(checks: list[Check], min_n: int = 0) -> dict:
    """Mean and largest absolute relative error of both predictions over runs with N >= min_n."""
    sel = [c for c in checks if c.n >= min_n]

    def stats(errs):
        errs = [abs(e) for e in errs if e is not None and math.isfinite(e)]
        if not errs:
            return {"mean_abs": None, "max_abs": None, "n": 0}
        return {"mean_abs": sum(errs) / len(errs), "max_abs": max(errs), "n": len(errs)}

    return {"min_n": min_n, "reference": stats([c.error for c in sel]),
            "calibrated": stats([c.calibrated_error for c in sel])}
