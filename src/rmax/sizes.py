"""Byte sizes as users write them: '4096', '64K', '8MiB', '1GB', '1e6'."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

from rmax.errors import RmaxError

# K, M, G and KiB, MiB, GiB are powers of 1024; KB, MB, GB powers of 1000.
UNITS = {"": 1, "b": 1, "k": 1 << 10, "kib": 1 << 10, "kb": 10**3, "m": 1 << 20, "mib": 1 << 20, "mb": 10**6,
         "g": 1 << 30, "gib": 1 << 30, "gb": 10**9, "t": 1 << 40, "tib": 1 << 40, "tb": 10**12}
MAX_BYTES = 1 << 50   # 1 PiB: beyond any memory or message rmax measures
_SIZE = re.compile(r"\s*(-?[0-9]+(?:\.[0-9]*)?(?:[eE][0-9]{1,3})?)\s*([A-Za-z]*)\s*")


def parse_size(text: str | int, what: str = "size", lo: int = 1, hi: int = MAX_BYTES) -> int:
    """Bytes in [lo, hi]; exact decimal arithmetic, so '1e400' or 20 nines are refused, never overflow."""
    if isinstance(text, int) and not isinstance(text, bool):
        value = Decimal(text)
    else:
        m = _SIZE.fullmatch(str(text))
        if not m or m.group(2).lower() not in UNITS:
            raise RmaxError(f"{what}: '{text}' is not a size", hint="examples: 4096, 64K, 8MiB, 1GB")
        try:
            value = Decimal(m.group(1)) * UNITS[m.group(2).lower()]
        except InvalidOperation:
            raise RmaxError(f"{what}: '{text}' is not a size", hint="examples: 4096, 64K, 8MiB, 1GB") from None
    if value != value.to_integral_value():
        raise RmaxError(f"{what}: '{text}' is not a whole number of bytes")
    if value < lo:
        raise RmaxError(f"{what} must be greater than zero, not {text}" if lo == 1 else
                        f"{what} must be at least {human_size(lo)}, not {text}")
    if value > hi:
        raise RmaxError(f"{what} must be at most {human_size(hi)}, not {text}")
    return int(value)


def human_size(n: int) -> str:
    for unit, k in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= k and n % k == 0:
            return f"{n // k} {unit}"
    return f"{n} B"


def human_bytes(nbytes: float | None) -> str:
    """A byte count to read, three significant digits ('11.3 MiB', '256 KiB'); '—' when unknown."""
    if nbytes is None:
        return "—"
    for unit, div in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= div:
            v = nbytes / div
            return f"{v:.0f} {unit}" if v >= 100 or v == int(v) else f"{v:.3g} {unit}"
    return f"{nbytes:.0f} B"
