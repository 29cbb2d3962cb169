"""Switch groups from all-pairs latency and bandwidth matrices.

Nodes on one switch talk faster to each other than across a trunk: lower
latency (one store-and-forward hop fewer, as on I-Cluster, Richard et al.) and, where trunks are
narrower or shared, higher bandwidth. So the pair values, on a log scale,
fall into two bands; the largest gap between sorted values separates them.
Pairs below the gap are linked, and the connected components are the
switches (single linkage). A gap counts only when it is both a real ratio
(min_ratio) and wide against the spread inside each band, so measurement
noise on a one-switch cluster does not invent switches.

Pure functions: no I/O, testable on synthetic matrices."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

Matrix = list[list[float | None]]


@dataclass
class MetricCut:
    metric: str               # "latency" or "bandwidth"
    ratio: float              # far / near across the gap (>1)
    significance: float       # gap / widest in-band spread (log scale)
    near: float               # median value of near pairs (s or bytes/s)
    far: float
    threshold: float          # the cut, in the metric's own unit


@dataclass
class Inference:
    groups: list[list[str]]
    decided_by: str | None            # metric whose gap defined the groups; None: no structure found
    cuts: list[MetricCut] = field(default_factory=list)
    inconsistent_pairs: list[tuple[str, str]] = field(default_factory=list)  # far pairs inside one group
    note: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


def _pairs(matrix: Matrix | None, n: int, invert: bool) -> dict[tuple[int, int], float]:
    """Symmetrised log-distances per unordered pair (mean of the two directions)."""
    out: dict[tuple[int, int], float] = {}
    if not matrix:
        return out
    for i in range(n):
        for j in range(i + 1, n):
            vals = [v for v in (matrix[i][j], matrix[j][i]) if v is not None and v > 0 and math.isfinite(v)]
            if vals:
                logs = [-math.log(v) if invert else math.log(v) for v in vals]
                out[(i, j)] = sum(logs) / len(logs)
    return out


def _cut(dist: dict[tuple[int, int], float], metric: str, invert: bool) -> MetricCut | None:
    vals = sorted(dist.values())
    if len(vals) < 2:
        return None
    gaps = [(vals[k + 1] - vals[k], k) for k in range(len(vals) - 1)]
    gap, k = max(gaps)
    lower, upper = vals[:k + 1], vals[k + 1:]
    spread = max(lower[-1] - lower[0], upper[-1] - upper[0], 1e-3)
    to_unit = (lambda x: math.exp(-x)) if invert else math.exp
    return MetricCut(metric=metric, ratio=math.exp(gap), significance=gap / spread,
                     near=to_unit(lower[len(lower) // 2]), far=to_unit(upper[len(upper) // 2]),
                     threshold=to_unit((vals[k] + vals[k + 1]) / 2))


def _components(n: int, linked: list[tuple[int, int]]) -> list[list[int]]:
    parent = list(range(n))

    def root(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for i, j in linked:
        parent[root(i)] = root(j)
    comps: dict[int, list[int]] = {}
    for i in range(n):
        comps.setdefault(root(i), []).append(i)
    return sorted(comps.values(), key=lambda c: c[0])


def infer_groups(latency: Matrix | None, bandwidth: Matrix | None, hosts: list[str], *,
                 min_ratio: float = 1.2, min_significance: float = 2.0) -> Inference:
    """Group hosts into switches; latency in seconds, bandwidth in bytes/s, either may be None."""
    n = len(hosts)
    for name, m in (("latency", latency), ("bandwidth", bandwidth)):
        if m is not None and (len(m) != n or any(len(row) != n for row in m)):
            raise ValueError(f"{name} matrix is not {n} x {n}")
    if n < 2:
        return Inference([list(hosts)], None, note="one host: nothing to group")
    dists = {"latency": _pairs(latency, n, invert=False), "bandwidth": _pairs(bandwidth, n, invert=True)}
    cuts = [c for c in (_cut(dists["latency"], "latency", False), _cut(dists["bandwidth"], "bandwidth", True))
            if c is not None]
    usable = [c for c in cuts if c.ratio >= min_ratio and c.significance >= min_significance]
    if not usable:
        return Inference([list(hosts)], None, cuts,
                         note="no gap between near and far pairs: the hosts look like one switch")
    # The widest gap first; but a grouping that puts far pairs inside a group (single linkage chained
    # it through odd pairs) gives way to one of the other metric that needs none. On a shared machine
    # one-way latency also measures whether the peer's CPU was awake, not only the switch.
    found = []
    for best in sorted(usable, key=lambda c: -c.ratio):
        dist = dists[best.metric]
        cut_log = -math.log(best.threshold) if best.metric == "bandwidth" else math.log(best.threshold)
        comps = _components(n, [p for p, d in dist.items() if d < cut_log])
        if len(comps) < 2:
            continue  # the gap split pairs, not hosts (one odd pair): no switch structure in this metric
        where = {i: g for g, comp in enumerate(comps) for i in comp}
        odd = [(hosts[i], hosts[j]) for (i, j), d in dist.items() if where[i] == where[j] and d >= cut_log]
        groups = [[hosts[i] for i in comp] for comp in comps]
        note = (f"{len(groups)} groups split by {best.metric}: near pairs {_show(best.metric, best.near)}, "
                f"far pairs {_show(best.metric, best.far)} (medians over the pairs; {best.ratio:.2f}x)")
        found.append(Inference(groups, best.metric, cuts, odd, note))
    if found:
        return min(found, key=lambda f: len(f.inconsistent_pairs) > 0)   # stable: the widest clean one
    return Inference([list(hosts)], None, cuts, note="the gaps found do not separate hosts: one switch")


def _show(metric: str, value: float) -> str:
    return f"{value * 1e6:.1f} us" if metric == "latency" else f"{value / 1e6:.1f} MB/s"
