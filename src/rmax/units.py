"""The one unit each quantity is shown in, everywhere: figures, tables, summaries, exports.

Inside, rmax keeps base units (seconds, bytes, bytes/s, flop/s). A number shown to a person or
written to an export is in the unit named here for its quantity, so that a pandas or jq user
never has to guess a prefix: every bandwidth (memory, network, transpose) in MB/s, MB = 10^6
bytes, STREAM's own unit. `SI` turns any shown unit back into base units; "1" marks a pure
number (a count, a ratio, a block size)."""

from __future__ import annotations

BANDWIDTH = "MB/s"       # 10^6 bytes a second
FLOP_RATE = "GFLOPS"     # 10^9 floating-point operations a second
UPDATE_RATE = "GUP/s"    # 10^9 table updates a second (RandomAccess)
LATENCY = "us"           # a message's, a system call's: microseconds
LOAD_LATENCY = "ns"      # one memory load: nanoseconds (a cache hit is a few)
DURATION = "s"
SIZE = "B"
PERCENT = "%"
NUMBER = "1"

# Shown unit -> its value in base units (bytes/s, flop/s, seconds, bytes).
SI = {BANDWIDTH: 1e6, "GB/s": 1e9, FLOP_RATE: 1e9, UPDATE_RATE: 1e9, LATENCY: 1e-6, LOAD_LATENCY: 1e-9,
      DURATION: 1.0, SIZE: 1.0, PERCENT: 1.0, NUMBER: 1.0}

# Base unit -> (factor from base to shown, shown unit).
FROM_BASE = {"bytes/s": (1e-6, BANDWIDTH), "flop/s": (1e-9, FLOP_RATE), "updates/s": (1e-9, UPDATE_RATE)}


def to_base(value: float, unit: str) -> float:
    """A shown value in base units (bytes/s, flop/s, seconds)."""
    return value * SI[unit]
