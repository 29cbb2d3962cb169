"""How a published rate is shown to a person: in its quantity's one unit (rmax.units)."""

from __future__ import annotations

import math

from rmax.units import BANDWIDTH, FLOP_RATE, LATENCY, SI

UNITS = {"flops_per_second": (SI[FLOP_RATE], FLOP_RATE), "bytes_per_second": (SI[BANDWIDTH], BANDWIDTH),
         "seconds": (SI[LATENCY], LATENCY)}


def shown(value: float | None, unit: str) -> str:
    scale, name = UNITS.get(unit, (1, unit))
    return "—" if value is None or not math.isfinite(value) else f"{value / scale:.4g} {name}"
