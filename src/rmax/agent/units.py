"""How a published rate is shown to a person: its unit's usual scale (GFLOPS, GB/s, us)."""

from __future__ import annotations

import math

UNITS = {"flops_per_second": (1e9, "GFLOPS"), "bytes_per_second": (1e9, "GB/s"), "seconds": (1e-6, "us")}


def shown(value: float | None, unit: str) -> str:
    scale, name = UNITS.get(unit, (1, unit))
    return "—" if value is None or not math.isfinite(value) else f"{value / scale:.4g} {name}"
