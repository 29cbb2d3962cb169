"""Which rank (or node) counts a scaling study visits."""

from __future__ import annotations

from rmax.errors import RmaxError


def powers_of_two(limit: int) -> list[int]:
    """1, 2, 4, ... up to limit, and limit itself when it is not a power of two."""
    if limit < 1:
        raise RmaxError(f"the largest rank count must be at least 1, not {limit}")
    out, k = [], 1
    while k <= limit:
        out.append(k)
        k *= 2
    if out[-1] != limit:
        out.append(limit)
    return out


def parse_counts(text: str) -> list[int]:
    """'1,2,4,8' -> [1, 2, 4, 8]; must start at 1 (speedup is relative to one) and be distinct."""
    try:
        counts = [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise RmaxError(f"--ranks: '{text}' is not a comma-separated list of whole numbers") from None
    if not counts:
        raise RmaxError("--ranks: no rank counts given")
    if min(counts) < 1:
        raise RmaxError(f"--ranks: every count must be at least 1, found {min(counts)}")
    if len(set(counts)) != len(counts):
        raise RmaxError("--ranks: a count is repeated (use --repeats for repeats)")
    counts = sorted(counts)
    if counts[0] != 1:
        raise RmaxError("--ranks must include 1: speedup and Karp-Flatt are relative to one rank")
    return counts
