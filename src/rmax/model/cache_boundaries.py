"""Cache boundaries found in a curve measured against working-set size.

Two signals, as Robert G. Brown used them ("Maximizing Beowulf Performance", cpu-rate):
- steps: the curve (a rate that falls, or a latency that rises, as the working
  set outgrows a cache) is cut into plateaus by an optimal piecewise-constant
  fit in log-log space; a boundary is where the curve crosses half-way (in
  log) between two consecutive plateaus;
- spread peaks: the run-to-run relative spread rises where page placement
  decides whether the vector fits, so its local maxima lie between boundaries;
  a peak counts when it is twice the curve's median spread and, given the
  samples per size, an F-test puts its variance above the median's.
A step counts as a boundary only when it is significant: at least `min_change`
(relative) between the plateaus, larger than the points' own spread (the robust
SD of their samples), and, given the samples, a Welch's t-test between the two
plateaus' samples rejects equal means. A curve without one says NO_BOUNDARY.
Pure functions of the numbers, so they can be tested on synthetic curves."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:   # numpy is imported where it is used: the module loads without it
    import numpy as np


from rmax.sizes import human_bytes
from rmax.stats import differ_significantly, robust_sd

NO_BOUNDARY = "no boundary found"
ALPHA = 0.01          # Welch's test level for a step between two plateaus
MIN_CHANGE = 0.15     # the smallest relative step between plateaus that can be a cache level
RULE = (f"a step counts as a boundary only if it is at least {MIN_CHANGE:.0%}, larger than the points' sample SD "
        f"(robust: 1.4826 MAD), and Welch's test (p < {ALPHA}) separates the two plateaus' samples")
SPREAD_RULE = (f"a spread peak counts only inside the curve, at least twice the curve's median spread, and if an F-test "
               f"of its variance against the median's rejects equality (p < {ALPHA}, Bonferroni over the lengths)")

@dataclass
class Plateau:
    first_bytes: int
    last_bytes: int
    level: float          # median of the curve over the plateau, in the curve's unit
    points: int


@dataclass
class Boundary:
    bytes: int            # estimated capacity where the curve changes level
    before: float         # plateau levels on either side
    after: float
    change: float         # after / before
    p_value: float | None = None   # Welch's test between the two plateaus' samples; None without samples
    spread: float | None = None    # the larger of the plateaus' typical per-point robust sample SD, curve unit


def _median3(z: np.ndarray) -> np.ndarray:
    import numpy as np
    if len(z) < 3:
        return z.copy()
    out = z.copy()
    out[1:-1] = np.median(np.lib.stride_tricks.sliding_window_view(z, 3), axis=1)   # one call, not one a point
    return out


def _segment(z: np.ndarray, penalty: float) -> list[tuple[int, int]]:
    """Optimal piecewise-constant segmentation (least squares + penalty per segment), by dynamic programming."""
    import numpy as np
    n = len(z)
    c1 = np.concatenate([[0.0], np.cumsum(z)])
    c2 = np.concatenate([[0.0], np.cumsum(z * z)])

    def cost(i: int, j: int) -> float:  # segment z[i:j]
        s, m = c1[j] - c1[i], j - i
        return float(c2[j] - c2[i] - s * s / m)

    best = [0.0] + [math.inf] * n
    prev = [0] * (n + 1)
    for j in range(1, n + 1):
        for i in range(j):
            v = best[i] + cost(i, j) + penalty
            if v < best[j]:
                best[j], prev[j] = v, i
    segs, j = [], n
    while j > 0:
        segs.append((prev[j], j))
        j = prev[j]
    return segs[::-1]


def _noise(z: np.ndarray) -> float:
    """Robust noise scale of a curve: the MAD of its second differences (insensitive to steps)."""
    import numpy as np
    if len(z) < 4:
        return 0.01
    return max(robust_sd(np.diff(z, 2)) / math.sqrt(6), 0.005)


def _finite(sizes, values) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The points with a finite, positive value (a curve in log space has no others): sizes, values, the mask."""
    import numpy as np
    sizes_a = np.asarray(sizes, dtype=float)
    v = np.asarray(values, dtype=float)
    ok = np.isfinite(v) & (v > 0)
    return sizes_a[ok], v[ok], ok


def plateaus(sizes, values, *, rising: bool = False, min_change: float = MIN_CHANGE,
             min_points: int = 3) -> list[Plateau]:
    """Plateaus of a curve against size: runs of at least `min_points` points whose levels
    differ from their neighbours' by at least `min_change` (relative)."""
    import numpy as np
    sizes, v, _ = _finite(sizes, values)
    if len(v) < min_points:
        return []
    z = np.log(v) if rising else -np.log(v)
    zs = _median3(z)
    sigma = _noise(zs)
    penalty = max(8.0 * sigma * sigma * math.log(len(zs)), math.log1p(min_change) ** 2 / 4)
    segs = [s for s in _segment(zs, penalty) if s[1] - s[0] >= min_points]
    # merge neighbours that are not different enough to be separate cache levels
    merged: list[tuple[int, int]] = []
    for s in segs:
        if merged:
            a = merged[-1]
            la, lb = np.median(zs[a[0]:a[1]]), np.median(zs[s[0]:s[1]])
            if abs(lb - la) < math.log1p(min_change):
                merged[-1] = (a[0], s[1])
                continue
        merged.append(s)
    out = []
    for i, j in merged:
        out.append(Plateau(int(sizes[i]), int(sizes[j - 1]), float(np.median(v[i:j])), j - i))
    return out


def _plateau_samples(sizes: np.ndarray, samples: list, p: Plateau) -> tuple[list[float], float]:
    """A plateau's samples pooled over its points, and the median of its points' robust sample SD."""
    import numpy as np
    idx = [i for i, x in enumerate(sizes) if p.first_bytes <= x <= p.last_bytes]
    pooled = [float(v) for i in idx for v in samples[i]]
    sds = [robust_sd(samples[i]) for i in idx if len(samples[i]) > 1]
    return pooled, float(np.median(sds)) if sds else 0.0


def boundaries(sizes, values, *, rising: bool = False, min_change: float = MIN_CHANGE,
               min_points: int = 3, samples=None, alpha: float = ALPHA) -> list[Boundary]:
    """Where the curve moves from one plateau to the next worse one (a lower rate, a longer latency),
    kept only where the step is significant (see the module's docstring). `samples`, one list per
    point, aligned with `sizes`, are the measurements each value summarises."""
    import numpy as np
    sizes_a, v, ok = _finite(sizes, values)
    if samples is not None:
        samples = [[x for x in sm if math.isfinite(x)] for sm, keep in zip(samples, ok) if keep]
    levels = plateaus(sizes_a, v, rising=rising, min_change=min_change, min_points=min_points)
    z = _median3(np.log(v) if rising else -np.log(v))
    out = []
    for a, b in zip(levels, levels[1:]):
        za = math.log(a.level) if rising else -math.log(a.level)
        zb = math.log(b.level) if rising else -math.log(b.level)
        if zb - za < math.log1p(min_change):
            continue  # the curve got better, or not by enough: not a cache running out
        p_value = spread = None
        if samples is not None:
            sa, spread_a = _plateau_samples(sizes_a, samples, a)
            sb, spread_b = _plateau_samples(sizes_a, samples, b)
            spread = max(spread_a, spread_b)
            significant, p_value = differ_significantly(sa, sb, alpha)
            if not significant or abs(b.level - a.level) <= spread:
                continue  # the step is within the points' own scatter
        half = (za + zb) / 2
        lo = int(np.searchsorted(sizes_a, a.last_bytes))
        hi = int(np.searchsorted(sizes_a, b.first_bytes))
        est = None
        for i in range(lo, hi):
            if z[i] <= half < z[i + 1]:
                # interpolate the crossing in log size
                f = (half - z[i]) / (z[i + 1] - z[i])
                est = math.exp(math.log(sizes_a[i]) + f * (math.log(sizes_a[i + 1]) - math.log(sizes_a[i])))
                break
        if est is None:
            est = math.sqrt(a.last_bytes * b.first_bytes)
        out.append(Boundary(int(round(est)), a.level, b.level, b.level / a.level, p_value, spread))
    return out


def staircase(sizes, values, *, rising: bool = False, min_change: float = MIN_CHANGE, min_points: int = 3,
              samples=None, alpha: float = ALPHA) -> tuple[list[Plateau], list[Boundary]]:
    """The curve's significant boundaries and the plateaus they divide: plateaus with no
    significant step between them are one (a flat curve is one plateau)."""
    import numpy as np
    steps = boundaries(sizes, values, rising=rising, min_change=min_change, min_points=min_points,
                       samples=samples, alpha=alpha)
    sizes_a, v, _ = _finite(sizes, values)
    spans: list[tuple[int, int]] = []
    for p in plateaus(sizes_a, v, rising=rising, min_change=min_change, min_points=min_points):
        if spans and not any(spans[-1][1] <= b.bytes <= p.first_bytes for b in steps):
            spans[-1] = (spans[-1][0], p.last_bytes)
        else:
            spans.append((p.first_bytes, p.last_bytes))
    out = []
    for first, last in spans:
        sel = (sizes_a >= first) & (sizes_a <= last)
        out.append(Plateau(first, last, float(np.median(v[sel])), int(sel.sum())))
    return out, steps


def describe(steps: list[Boundary]) -> str:
    """What a curve's boundaries say in words: NO_BOUNDARY, or the sizes."""
    if not steps:
        return NO_BOUNDARY
    return ("boundary at " if len(steps) == 1 else "boundaries at ") + ", ".join(human_bytes(b.bytes) for b in steps)


def aligned(steps: list[Boundary], caches: dict[str, int], factor: float = 2.0) -> dict[int, str]:
    """Which boundary (by index) lines up with which reported cache: each cache goes to the boundary
    nearest it in log size, if within `factor` of it (a boundary is the half-way crossing, so it
    lies past the capacity on a non-LRU cache). At most one cache per boundary, the nearest."""
    out: dict[int, tuple[str, float]] = {}
    for name, size in caches.items():
        if not size or not steps:
            continue
        i = min(range(len(steps)), key=lambda k: abs(math.log(steps[k].bytes / size)))
        d = abs(math.log(steps[i].bytes / size))
        if d <= math.log(factor) and (i not in out or d < out[i][1]):
            out[i] = (name, d)
    return {i: name for i, (name, _) in out.items()}


def spread_peaks(sizes, rel_spread, ns=None, *, factor: float = 2.0, window: int = 2,
                 alpha: float = ALPHA) -> list[int]:
    """Sizes where the relative run-to-run spread has a local maximum at least `factor` times the
    curve's median spread (Brown: peaks lie between boundaries), the spread falling again on both
    sides (a rise at either end of the sweep is no peak). With `ns` (samples per size), a
    peak must also be significant: an SD estimated from a few samples scatters by itself, so its
    variance must exceed the median's by an F-test at `alpha`, Bonferroni-corrected over the sizes."""
    import numpy as np
    s = np.asarray(rel_spread, dtype=float)
    sizes = np.asarray(sizes, dtype=float)
    n = np.asarray(ns if ns is not None else [0] * len(s), dtype=float)
    ok = np.isfinite(s)
    s, sizes, n = s[ok], sizes[ok], n[ok]
    if len(s) < 2 * window + 1:
        return []
    sm = _median3(s)
    base = float(np.median(sm))
    base_df = float(np.sum(np.maximum(n - 1, 0)))      # the median's degrees of freedom, pooled
    peaks = []
    for i in range(1, len(sm) - 1):
        lo, hi = max(0, i - window), min(len(sm), i + window + 1)
        falls = sm[lo:i].min() < sm[i] and sm[i + 1:hi].min() < sm[i]
        if falls and sm[i] == sm[lo:hi].max() and sm[i] >= factor * base and sm[i] > 0:
            if ns is not None and not _spread_above(sm[i], base, n[i], base_df, alpha / len(sm)):
                continue
            if not peaks or i - peaks[-1] > window:
                peaks.append(i)
    return [int(sizes[i]) for i in peaks]


def _spread_above(sd: float, base: float, n: float, base_df: float, alpha: float) -> bool:
    """Whether an SD from n samples is significantly above a baseline SD pooled over base_df degrees of freedom."""
    if n < 2 or base_df < 1:
        return False
    if base <= 0:
        return True
    from scipy.special import fdtrc   # scipy.stats.f.sf itself, without importing scipy.stats (about 1 CPU-s)

    return float(fdtrc(n - 1, base_df, (sd / base) ** 2)) < alpha


def match(detected: list[int], reported: dict[str, int]) -> dict[str, dict]:
    """For each reported cache (name -> bytes), the nearest detected boundary in log size and their ratio."""
    out = {}
    for name, size in reported.items():
        if not size or not detected:
            out[name] = {"reported_bytes": size, "detected_bytes": None, "ratio": None}
            continue
        near = min(detected, key=lambda d: abs(math.log(d / size)))
        out[name] = {"reported_bytes": size, "detected_bytes": near, "ratio": near / size}
    return out
