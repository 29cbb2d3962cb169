"""Switch trees from all-pairs latency and bandwidth matrices.

Nodes on one switch talk faster to each other than across a trunk: lower
latency (one store-and-forward hop fewer, as on I-Cluster, Richard et al.) and,
where trunks are narrower or shared, higher bandwidth; two leaves under one
spine are nearer than two leaves under different spines. Per metric, on a log
scale (ratios matter, not units):

1. Average-linkage clustering of the hosts (UPGMA, by nearest-neighbour chains:
   O(n^2) time): the distance between two groups is the mean over their
   *measured* pairs, so a missing pair (None, as in a sampled matrix) weighs
   nothing, and one odd pair cannot chain two switches together as single
   linkage did.
2. Each merge has a height (the mean distance between the groups it joins), and
   each pair belongs to the merge that first joins its hosts. Switch levels show
   as gaps between bands of heights: merges inside a switch sit at the near
   level, merges of switches at a far one, of spines higher still. A gap is a
   level boundary only when (a) the first merge above it stands above the last
   one below by several standard errors of a merge's height (`significance`: a
   merge of m pairs errs by the band's spread over sqrt(m)), (b) the pairs joined
   just above are farther than those joined just below in nearly every couple
   (the Mann-Whitney probability, `separation`) and (c) by a real ratio of
   medians. Heights average many pairs at the levels that matter, so
   cross-switch pairs spread 3-12 MB/s by trunks shared unevenly in concurrent
   rounds do not hide a boundary; on one switch the bottom merges are single
   pairs, the extremes of the noise, widely spaced but each as uncertain as one
   pair, so noise does not invent a switch.
3. Cutting the tree at the first boundary gives the leaf switches. The levels
   above them come from a second tree, of the switches, each switch pair one
   unit (the mean of its measured pairs), judged by the same three tests.

Pure functions: no I/O, testable on synthetic matrices."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace

import numpy as np

Matrix = list[list[float | None]]

# Largest height gaps examined per metric: a real tree has a few levels; the
# rest are noise that the tests would refuse anyway.
MAX_CANDIDATES = 16


@dataclass
class MetricCut:
    metric: str               # "latency" or "bandwidth"
    level: int                # 1: the boundary just above the leaf switches, 2: the next one up, ...
    ratio: float              # far / near (medians of the pairs joined just above / just below the cut, >1 is farther)
    separation: float         # fraction of (far, near) pair couples in which the far pair is farther (0.5: none)
    significance: float       # the gap between the two merges at the cut, in standard errors of their heights
    near: float               # median of the pairs just below, in the metric's unit (s or bytes/s)
    far: float
    threshold: float          # the cut, in the metric's unit
    accepted: bool            # a level boundary; False: the strongest candidate, refused


@dataclass
class Inference:
    groups: list[list[str]]           # leaf switches
    decided_by: str | None            # metric whose tree is reported; None: no structure found
    cuts: list[MetricCut] = field(default_factory=list)
    inconsistent_pairs: list[tuple[str, str]] = field(default_factory=list)  # far pairs inside one group
    note: str = ""
    # Bottom-up: levels[0] == groups, the last level is all hosts in one group;
    # parents[k][g] is the index in levels[k + 1] of the group holding levels[k][g].
    levels: list[list[list[str]]] = field(default_factory=list)
    parents: list[list[int]] = field(default_factory=list)

    def to_dict(self) -> dict:
        """JSON-safe: a statistic that is infinite (no noise at all) or was not computed is None."""
        d = asdict(self)
        d["cuts"] = [{k: (v if not isinstance(v, float) or math.isfinite(v) else None) for k, v in c.items()}
                     for c in d["cuts"]]
        return d


@dataclass
class _Tree:
    """One metric's dendrogram: merges sorted by height, and each measured pair's merge."""
    d: np.ndarray             # symmetric log-distances, NaN where not measured
    merges: list[tuple[int, int, float, int]]   # (a host of one side, a host of the other, height, pairs)
    pair_vals: np.ndarray     # measured pairs (i < j), sorted by distance
    pair_merge: np.ndarray    # index of the merge joining each of those pairs
    cum_ss: np.ndarray        # over merges 0..k: the sum of their pairs' squared deviations from their merge's height
    cum_df: np.ndarray        # and its degrees of freedom (pairs less one, per merge)


def _distances(matrix: Matrix | None, n: int, invert: bool) -> np.ndarray | None:
    """Symmetrised log-distances (mean of the two directions' logs), NaN where neither was measured."""
    if not matrix:
        return None
    try:
        a = np.array(matrix, dtype=float)     # None becomes NaN
    except (TypeError, ValueError):
        raise ValueError("matrix entries must be numbers or None") from None
    ok = np.isfinite(a) & (a > 0)
    logs = np.zeros_like(a)
    np.log(a, out=logs, where=ok)
    if invert:
        logs = -logs
    count = ok.astype(float) + ok.T
    total = np.where(ok, logs, 0.0) + np.where(ok.T, logs.T, 0.0)
    d = np.full((n, n), np.nan)
    np.divide(total, count, out=d, where=count > 0)
    np.fill_diagonal(d, np.nan)
    return d


def _linkage(d: np.ndarray) -> list[tuple[int, int, float, int]]:
    """Average-linkage merges (host of one side, host of the other, height, measured pairs between
    the sides) by nearest-neighbour chains, sorted by height.
    Average linkage is reducible (a merged group is never nearer to a third than both its parts
    were), which keeps a chain valid after its top two merge. Groups with no measured pair to
    any other join at the top, at height inf."""
    n = len(d)
    measured = np.isfinite(d)
    s = np.where(measured, d, 0.0)
    c = measured.astype(float)
    active = np.ones(n, dtype=bool)
    merges: list[tuple[int, int, float, int]] = []
    apart: list[int] = []
    chain: list[int] = []
    left = n
    row = np.empty(n)
    while left > 1:
        if not chain:
            chain.append(int(np.flatnonzero(active)[0]))
        a = chain[-1]
        row.fill(np.inf)
        np.divide(s[a], c[a], out=row, where=active & (c[a] > 0))
        row[a] = np.inf
        b = int(np.argmin(row))
        if len(chain) > 1 and row[chain[-2]] <= row[b]:
            b = chain[-2]        # ties go back down the chain, or it could cycle
        if not math.isfinite(row[b]):
            active[a] = False    # nothing measured between it and the rest
            apart.append(a)
            chain.pop()
            left -= 1
            continue
        if len(chain) > 1 and b == chain[-2]:
            chain.pop()
            chain.pop()
            merges.append((a, b, float(row[b]), int(c[a, b])))
            s[a] += s[b]
            c[a] += c[b]
            s[:, a] = s[a]
            c[:, a] = c[a]
            active[b] = False
            left -= 1
        else:
            chain.append(b)
    root = int(np.flatnonzero(active)[0])
    merges += [(root, x, math.inf, 0) for x in apart]
    return sorted(merges, key=lambda m: m[2])


class _Groups:
    """Union-find over hosts, replaying merges in height order."""

    def __init__(self, n: int):
        self.parent = list(range(n))
        self.members = {i: [i] for i in range(n)}

    def root(self, x: int) -> int:
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def join(self, a: int, b: int) -> tuple[list[int], list[int]]:
        ra, rb = self.root(a), self.root(b)
        ma, mb = self.members[ra], self.members[rb]
        if len(ma) < len(mb):
            ra, rb, ma, mb = rb, ra, mb, ma
        self.parent[rb] = ra
        out = (list(ma), list(mb))
        ma.extend(self.members.pop(rb))
        return out

    def partition(self) -> list[list[int]]:
        return sorted((sorted(m) for m in self.members.values()), key=lambda g: g[0])


def _tree(d: np.ndarray) -> _Tree:
    n = len(d)
    merges = _linkage(d)
    lca = np.full((n, n), -1, dtype=np.int64)
    g = _Groups(n)
    for k, (a, b, _, _) in enumerate(merges):
        ma, mb = g.join(a, b)
        lca[np.ix_(ma, mb)] = k
        lca[np.ix_(mb, ma)] = k
    iu, ju = np.triu_indices(n, 1)
    vals = d[iu, ju]
    keep = np.isfinite(vals)
    vals, pm = vals[keep], lca[iu, ju][keep]
    order = np.argsort(vals, kind="stable")
    # A merge's height is the mean of its pairs: how far they stray from it is the noise at
    # that level (a merge of one pair says nothing).
    h = np.array([m[2] for m in merges])
    ss = np.bincount(pm, weights=(vals - h[pm]) ** 2, minlength=len(merges))
    df = np.array([max(m[3] - 1, 0) for m in merges], dtype=float)
    return _Tree(d, merges, vals[order], pm[order], np.cumsum(ss), np.cumsum(df))


def _partition(tree: _Tree, upto: int) -> list[list[int]]:
    """Groups formed by the merges 0..upto."""
    g = _Groups(len(tree.d))
    for a, b, _, _ in tree.merges[:upto + 1]:
        g.join(a, b)
    return g.partition()


def _significance(tree: _Tree, lo: int, gap: int) -> float:
    """How far the first merge above the cut stands above the last one below, in standard normal
    units, against the hypothesis that both belong to one band (no level between them).
    A merge's height is the mean of its pairs, so its error is the band's spread over the root of
    its pair count; the spread is pooled over the merges below the cut and the one above it (all
    one band under the hypothesis), and with few pairs to pool it is itself uncertain (Student's
    t). The merges of single pairs at the bottom of a noisy band are its extremes, widely
    spaced: this is what keeps them from looking like a level."""
    from scipy.special import ndtri, stdtr

    (_, _, h0, m0), (_, _, h1, m1) = tree.merges[gap], tree.merges[gap + 1]
    below_ss = tree.cum_ss[gap] - (tree.cum_ss[lo] if lo >= 0 else 0.0)
    below_df = tree.cum_df[gap] - (tree.cum_df[lo] if lo >= 0 else 0.0)
    ss = below_ss + tree.cum_ss[gap + 1] - tree.cum_ss[gap]
    df = below_df + max(m1 - 1, 0)
    if df < 1:
        return 0.0                   # nothing says how noisy the pairs are
    err = math.sqrt(ss / df * (1 / m0 + 1 / m1))
    if err == 0:
        return math.inf
    return float(-ndtri(stdtr(df, -(h1 - h0) / err)))     # the t tail's probability, as a normal deviate


def _judge(tree: _Tree, lo: int, gap: int, hi: int, metric: str, level: int,
           limits: tuple[float, float, float], screen: bool = True) -> tuple[MetricCut, float]:
    """The cut after merge `gap`: pairs joined by merges lo+1..gap (near) against gap+1..hi (far).
    Returns the cut and its margin (log distance between the far pairs' 10th and the near pairs'
    90th percentile), by which two metrics that both find a tree are compared. screen: a cut
    whose significance fails is refused without the pass over the pairs (ratio, separation NaN)."""
    min_ratio, min_separation, min_significance = limits
    pm, vals = tree.pair_merge, tree.pair_vals
    z = _significance(tree, lo, gap)
    to_unit = (lambda x: math.exp(-x)) if metric == "bandwidth" else math.exp
    cut_at = (tree.merges[gap][2] + tree.merges[gap + 1][2]) / 2
    if screen and z < min_significance:
        return MetricCut(metric, level, math.nan, math.nan, z, math.nan, math.nan, to_unit(cut_at), False), -math.inf
    near_mask = (pm > lo) & (pm <= gap)
    far_mask = (pm > gap) & (pm <= hi)
    near, far = vals[near_mask], vals[far_mask]   # each sorted, as vals is
    if not len(near) or not len(far):
        return MetricCut(metric, level, 1.0, 0.5, z, math.nan, math.nan, to_unit(cut_at), False), -math.inf
    # P(far > near) over all couples, from one pass over the pairs in distance order
    below = np.cumsum(near_mask)[far_mask]
    separation = float(below.sum()) / (len(near) * len(far))
    mn, mf = float(np.median(near)), float(np.median(far))
    ratio = math.exp(mf - mn)
    margin = float(np.quantile(far, 0.1) - np.quantile(near, 0.9))
    ok = ratio >= min_ratio and separation >= min_separation and z >= min_significance
    return MetricCut(metric, level, ratio, separation, z, to_unit(mn), to_unit(mf), to_unit(cut_at), ok), margin


def _levels(tree: _Tree, metric: str, limits: tuple[float, float, float]):
    """The accepted cuts (merge indices, bottom-up), their MetricCuts and the leaf cut's margin.
    Candidates are the widest gaps between consecutive finite heights; the weakest failing one is
    dropped and its neighbours judged again over the wider bands, until every cut left passes."""
    h = np.array([m[2] for m in tree.merges])
    top = int(np.isfinite(h).sum()) - 1          # last merge with measured pairs
    if top < 1:
        return [], [], -math.inf
    gaps = np.diff(h[:top + 1])
    cuts = sorted(int(k) for k in np.argsort(-gaps, kind="stable")[:MAX_CANDIDATES] if gaps[k] > 0)
    cache: dict[tuple[int, int, int], tuple[MetricCut, float]] = {}
    best_refused: tuple[MetricCut, tuple[int, int, int]] | None = None
    while cuts:
        judged, keys = [], []
        for j, k in enumerate(cuts):
            key = (cuts[j - 1] if j else -1, k, cuts[j + 1] if j + 1 < len(cuts) else top)
            if key not in cache:
                cache[key] = _judge(tree, *key, metric, j + 1, limits)
            judged.append(cache[key])
            keys.append(key)
        failing = [j for j, (c, _) in enumerate(judged) if not c.accepted]
        if not failing:
            return cuts, [replace(c, level=j + 1) for j, (c, _) in enumerate(judged)], judged[0][1]
        worst = min(failing, key=lambda j: _strength(judged[j][0]))
        refused = (judged[worst][0], keys[worst])
        if best_refused is None or _strength(refused[0]) > _strength(best_refused[0]):
            best_refused = refused
        del cuts[worst]
    if best_refused is None:
        return [], [], -math.inf
    # say how far the strongest refused candidate fell short, in all three measures
    return [], [_judge(tree, *best_refused[1], metric, 1, limits, screen=False)[0]], -math.inf


def _upper(tree: _Tree, leaf: list[list[int]], metric: str,
           limits: tuple[float, float, float]) -> tuple[list[list[list[int]]], list[MetricCut]]:
    """The levels above the leaf switches (host partitions, bottom-up) and their cuts, judged with
    switch pairs as the units: the mean distance between two switches' hosts is one value. The
    pairs between two switches are measured in the same few rounds and share their trunks'
    load, so as units of their own they would make a difference of schedule look significant
    (48 nodes on a chain of 4 switches once grouped the two end switches, at 0.7 standard errors
    as switch pairs). Being few, switch pairs give the t test little power: two pods of two leaves
    under a 3x narrower core stand 2.3-2.5 standard errors apart, halves of a chain of 4 switches
    1.3-1.7 (simulated as in tests/vcluster/test_topology_trees.py), hence its own threshold."""
    g = len(leaf)
    if g < 3:
        return [], []
    member = np.zeros((len(tree.d), g))
    for k, hosts in enumerate(leaf):
        member[hosts, k] = 1.0
    measured = np.isfinite(tree.d)
    total = member.T @ np.where(measured, tree.d, 0.0) @ member
    count = member.T @ measured.astype(float) @ member
    blocks = np.full((g, g), np.nan)
    np.divide(total, count, out=blocks, where=count > 0)
    np.fill_diagonal(blocks, np.nan)
    btree = _tree(blocks)
    cuts, judged, _ = _levels(btree, metric, limits)
    parts = [[sorted(h for k in grp for h in leaf[k]) for grp in _partition(btree, c)] for c in cuts]
    return parts, [replace(c, level=j + 2) for j, c in enumerate(judged) if c.accepted]


def _strength(c: MetricCut) -> tuple:
    """Order of refusal: the least significant first, then the least separated (NaN: not looked at)."""
    return (c.significance, 0.0 if math.isnan(c.separation) else c.separation,
            0.0 if math.isnan(c.ratio) else c.ratio)


def infer_groups(latency: Matrix | None, bandwidth: Matrix | None, hosts: list[str], *,
                 min_ratio: float = 1.2, min_separation: float = 0.9, min_significance: float = 3.0,
                 min_level_significance: float = 2.0) -> Inference:
    """Group hosts into switches and switches into a tree; latency in seconds, bandwidth in
    bytes/s, either may be None, and so may any entry (a pair not measured).
    min_level_significance: the significance test for the levels above the switches, whose units
    are switch pairs, a handful per level (see _upper)."""
    n = len(hosts)
    for name, m in (("latency", latency), ("bandwidth", bandwidth)):
        if m is not None and (len(m) != n or any(len(row) != n for row in m)):
            raise ValueError(f"{name} matrix is not {n} x {n}")
    one = [list(hosts)]
    if n < 2:
        return Inference(one, None, note="one host: nothing to group", levels=[one])
    found, all_cuts = [], []
    for metric, m in (("bandwidth", bandwidth), ("latency", latency)):
        d = _distances(m, n, invert=metric == "bandwidth")
        if d is None or not np.isfinite(d).any():
            continue
        tree = _tree(d)
        cuts, judged, margin = _levels(tree, metric, (min_ratio, min_separation, min_significance))
        all_cuts += judged
        if cuts:
            found.append((margin, metric, tree, cuts, judged))
    if not found:
        return Inference(one, None, all_cuts, levels=[one],
                         note="no gap between near and far pairs: the hosts look like one switch")
    # Both metrics found a tree: the one whose leaf switches stand clearer of each other wins (on a
    # shared machine one-way latency also measures whether the peer's CPU was awake, not only the switch).
    _, metric, tree, cuts, judged = max(found, key=lambda f: f[0])
    leaf = _partition(tree, cuts[0])
    upper, above = _upper(tree, leaf, metric, (min_ratio, min_separation, min_level_significance))
    all_cuts = [c for c in all_cuts if c.metric != metric or c.level == 1] + above
    levels_idx = [leaf, *upper, [list(range(n))]]
    levels = [[[hosts[i] for i in g] for g in part] for part in levels_idx]
    parents = []
    for lower, upper in zip(levels_idx, levels_idx[1:]):
        where = {i: p for p, g in enumerate(upper) for i in g}
        parents.append([where[g[0]] for g in lower])
    where = {i: p for p, g in enumerate(leaf) for i in g}
    cut_log = (tree.merges[cuts[0]][2] + tree.merges[cuts[0] + 1][2]) / 2
    odd = [(hosts[i], hosts[j]) for i in range(n) for j in leaf[where[i]] if j > i and tree.d[i, j] > cut_log]
    c = judged[0]
    note = (f"{len(leaf)} groups split by {metric}: near pairs {_show(metric, c.near)}, far pairs "
            f"{_show(metric, c.far)} (medians over the pairs; {c.ratio:.2f}x, separation {c.separation:.2f})")
    if len(levels) > 2:
        note += "; above them " + ", then ".join(f"{len(lv)} groups" for lv in levels[1:-1])
    alone = [hosts[i] for i in range(n) if not np.isfinite(tree.d[i]).any()]
    if alone:
        note += f"; no pair measured with {', '.join(alone)}: each left a group of its own"
    return Inference(levels[0], metric, all_cuts, odd, note, levels, parents)


def _show(metric: str, value: float) -> str:
    return f"{value * 1e6:.1f} us" if metric == "latency" else f"{value / 1e6:.1f} MB/s"
