"""The Karp-Flatt metric: the experimentally determined serial fraction

    e(p) = (1/S - 1/p) / (1 - 1/p)        for p > 1

Under Amdahl's law with serial fraction f, e(p) = f for every p; an e that
grows with p says the overhead grows with p (Tis in the generalised Amdahl model of
Brown, "Maximizing Beowulf Performance"), which
Amdahl's law alone cannot explain. That is why it is shown per point."""

from __future__ import annotations

import math


def karp_flatt(speedup: float, p: float) -> float | None:
    """The serial fraction for a measured speedup on p processors; None for p = 1 (undefined)."""
    if p <= 1:
        return None
    if speedup <= 0 or not math.isfinite(speedup):
        return None
    return (1.0 / speedup - 1.0 / p) / (1.0 - 1.0 / p)
