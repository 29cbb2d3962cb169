"""A cheap stand-in for HPL: a deterministic GFLOPS surface over the search
space plus seeded Gaussian noise. It is a test objective (a pure function with
a known optimum), so strategy logic can be tested fast and exactly."""

from __future__ import annotations

import random

from rmax.tune.evaluator import Measurement

# The optimum: every other value costs a fixed fraction of the rate.
BEST = {"nb": 192, "grid": (2, 2), "depth": 1, "bcast": 4, "swap": 2, "swap_threshold": 64, "pfact": 2,
        "rfact": 1, "nbmin": 4, "ndiv": 2, "pmap": 0}
PENALTY = {"nb": 0.06, "grid": 0.12, "depth": 0.05, "bcast": 0.03, "swap": 0.02, "swap_threshold": 0.004,
           "pfact": 0.015, "rfact": 0.01, "nbmin": 0.01, "ndiv": 0.005, "pmap": 0.002}


def surface(cand: dict) -> float:
    g = 100.0
    for p, best in BEST.items():
        if cand[p] != best:
            # NB: the further from the best the worse (a smooth valley, like a real NB sweep).
            scale = abs(cand[p] - best) / 64 if p == "nb" else 1.0
            g *= 1 - PENALTY[p] * scale
    return g


class Objective:
    def __init__(self, cv: float = 0.01, seed: int = 1, invalid: set | None = None):
        self.rng = random.Random(seed)
        self.cv = cv
        self.invalid = invalid or set()   # nb values whose trials FAIL the residual check
        self.calls = 0

    def __call__(self, cand: dict) -> Measurement:
        self.calls += 1
        if cand["nb"] in self.invalid:
            return Measurement(None, "invalid", 1.0)
        return Measurement(surface(cand) * (1 + self.rng.gauss(0, self.cv)), "ok", 1.0)
