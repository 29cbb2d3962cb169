"""Switch trees from all-pairs latency and bandwidth matrices, as one of three answers: a layout
(switches and the levels above them, with the boundaries that decided them), one switch, or
undecided (the candidate layouts, the hosts whose pairs would decide, and so the command).

Nodes on one switch talk faster to each other than across a trunk: lower latency and, where
trunks are narrower or shared, higher bandwidth. Per metric, on a log scale (ratios matter):

1. Candidates: the pairs are dealt into folds; for each fold, the average-linkage tree (UPGMA by
   nearest-neighbour chains, O(n^2); a missing pair weighs nothing) of the other folds' pairs is
   cut at its widest gaps between merge heights, and each cut refined (every host moved to the
   group it is nearest on average).
2. Each candidate is judged on the pairs of the folds it was made without, so that the noise a
   cut was chosen for gives it no edge: between two of its groups each host has a margin, its
   mean log distance to the other group less that to its own (its own speed cancels), and the
   margins of both groups' hosts are the units of a t test. A boundary stands (yes) at
   min_significance standard errors and min_ratio; it is ruled out (no) when its mean margin,
   two standard errors up, is below min_ratio, or under one standard error; else maybe.
   Measured matrices are not independent pair by pair: a pair's rate settles for its
   connection's life and the pairs measured at once share the cores (tests/vcluster/matrices),
   which is why a candidate is never judged on the pairs that made it.
3. The layout is the finest candidate whose boundaries all stand, decided only when no other as
   fine stands too, no finer one is maybe, every host is nearer its own group than the next by
   T_HOST standard errors of its pairs, and no group shows a split of its own on the whole matrix
   (a layout too coarse passes the held-out tests too). One switch when no candidate has any
   evidence; else undecided. Other measurements of some of the hosts (what an undecided answer
   asks for) judge the boundaries they cover on their own margins.
4. The levels above the switches come from a second tree, of the switches, each switch pair one
   unit (the mean of its measured pairs), judged by significance, separation and ratio (_upper),
   on pairs measured one at a time: a level that a matrix of concurrent pairs shows is open
   until such a measurement of every switch pair judges it (_layout).

Pure functions: no I/O, testable on synthetic and stored matrices."""

from __future__ import annotations

import math
from collections.abc import Sequence
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
class _Tree:
    """One metric's dendrogram: merges sorted by height, and each measured pair's merge."""
    d: np.ndarray             # symmetric log-distances, NaN where not measured
    merges: list[tuple[int, int, float, int]]   # (a host of one side, a host of the other, height, pairs)
    pair_vals: np.ndarray     # measured pairs (i < j), sorted by distance
    pair_merge: np.ndarray    # index of the merge joining each of those pairs
    cum_ss: np.ndarray        # over merges 0..k: the sum of their pairs' squared deviations from their merge's height
    cum_df: np.ndarray        # and its degrees of freedom (pairs less one, per merge)


def _distances(matrix: Matrix | None, n: int, invert: bool, best: bool = False) -> np.ndarray | None:
    """Symmetrised log-distances (mean of the two directions' logs; best: the nearer of the two),
    NaN where neither was measured. A pair measured alone has one path both ways, and what else
    can hold a direction back (on a virtual cluster, its two ranks on two CPUs rather than one:
    27 against 55 MB/s here) only slows it, so its nearer direction is its path's."""
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
    d = np.full((n, n), np.nan)
    if best:
        near = np.minimum(np.where(ok, logs, np.inf), np.where(ok.T, logs.T, np.inf))
        np.copyto(d, near, where=np.isfinite(near))
    else:
        count = ok.astype(float) + ok.T
        total = np.where(ok, logs, 0.0) + np.where(ok.T, logs.T, 0.0)
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


def _normal(t: float, df: float) -> float:
    """Student's t on df degrees of freedom as the normal deviate of the same tail: a standard error
    estimated from a few units is itself uncertain (4 margins: t -4.5 for -2). Each sign from its
    own tail, which keeps the far ones exact."""
    from scipy.special import ndtri, stdtr

    df = max(df, 1)
    return float(-ndtri(stdtr(df, -t)) if t > 0 else ndtri(stdtr(df, t)))


def _significance(tree: _Tree, lo: int, gap: int) -> float:
    """How far the first merge above the cut stands above the last one below, in standard normal
    units, against the hypothesis that both belong to one band (no level between them).
    A merge's height is the mean of its pairs, so its error is the band's spread over the root of
    its pair count; the spread is pooled over the merges below the cut and the one above it (all
    one band under the hypothesis), and with few pairs to pool it is itself uncertain (Student's
    t). The merges of single pairs at the bottom of a noisy band are its extremes, widely
    spaced: this is what keeps them from looking like a level."""
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
    return _normal((h1 - h0) / err, df)


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


def _upper(d: np.ndarray, leaf: list[list[int]], metric: str,
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
    btree = _tree(_blocks(d, leaf))
    cuts, judged, _ = _levels(btree, metric, limits)
    parts = [[sorted(h for k in grp for h in leaf[k]) for grp in _partition(btree, c)] for c in cuts]
    return parts, [replace(c, level=j + 2) for j, c in enumerate(judged) if c.accepted]


def _block_sums(d: np.ndarray, leaf: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    """Switch x switch: the sum of the measured pairs' log distances between two switches' hosts,
    and their count."""
    member = np.zeros((len(d), len(leaf)))
    for k, hosts in enumerate(leaf):
        member[hosts, k] = 1.0
    measured = np.isfinite(d)
    return member.T @ np.where(measured, d, 0.0) @ member, member.T @ measured.astype(float) @ member


def _blocks(d: np.ndarray, leaf: list[list[int]]) -> np.ndarray:
    """Switch x switch: the mean log distance of the measured pairs between two switches' hosts
    (NaN where none was measured, and on the diagonal)."""
    total, count = _block_sums(d, leaf)
    blocks = np.full(total.shape, np.nan)
    np.divide(total, count, out=blocks, where=count > 0)
    np.fill_diagonal(blocks, np.nan)
    return blocks


def _strength(c: MetricCut) -> tuple:
    """Order of refusal: the least significant first, then the least separated (NaN: not looked at)."""
    return (c.significance, 0.0 if math.isnan(c.separation) else c.separation,
            0.0 if math.isnan(c.ratio) else c.ratio)


# -- the leaf switches: candidate layouts, each judged on pairs it was not made from

T_YES = 3.0        # a boundary stands: its hosts' margins average this many standard errors above zero
T_MAYBE = 2.0      # a boundary whose mean margin is this many standard errors below min_ratio is ruled out
T_NONE = 1.0       # and one whose held-out margins average under this many standard errors has nothing for it
MAX_GROUPS = 64    # the finest candidate cut of each half's tree
T_HOST = 2.0       # a host is placed when its pairs to its own group are nearer than to the next by this many
SMALL = 8          # fewer hosts: no pairs held out (see _metric_answer)
MIN_MARGINS = 4    # fewer host margins say nothing about a boundary (a candidate of tiny groups)
WEAKEST = 3        # hosts of each side named as the ones a contested boundary hinges on
DECIDE_HOSTS = 12  # most hosts in the deciding measurement
MIN_PARTNERS = 3   # fewer measured partners of a host: too few pairs to say "one switch"


@dataclass
class Boundary:
    """Two groups of a candidate layout, judged host by host on pairs the candidate was not made
    from: a host's margin is its mean log distance to the other group less its mean to its own
    (> 0: its own group is nearer). A host's own speed cancels in its margin (it is in both means),
    and a pair's noise is in one host's means only, so that the margins of the hosts of both sides
    are the units of a t test."""
    metric: str
    a: list[str]              # the two groups' hosts
    b: list[str]
    hosts: int                # margins (a host alone in its group has none; each source's count)
    ratio: float              # exp(median margin): how much farther the other group is, for the typical host
    t: float                  # the mean margin in standard errors (inf: no spread, nan: too few)
    verdict: str              # yes | maybe | no
    weakest: list[str]        # the hosts of either side with the smallest margins: the verdict hinges on them


@dataclass
class Candidate:
    metric: str
    groups: list[list[str]]
    verdict: str              # yes: every boundary stands; no: one has no evidence; maybe: the rest
    boundaries: list[Boundary]    # the weakest few, weakest first
    source: str = ""          # the folds whose candidates it was ("1,3": made without fold 1's pairs, and without 3's)
    above: list[list[list[str]]] = field(default_factory=list)   # the levels above its switches, bottom-up (the root left out)


@dataclass
class Evidence:
    """Another all-pairs measurement of some of the hosts (the deciding one an undecided answer
    asks for): its margins join the tests, measured under its own load, never mixed with the
    first matrix's values."""
    hosts: list[str]
    latency: Matrix | None
    bandwidth: Matrix | None
    source: str = ""          # e.g. the stored run's id
    alone: bool = False       # its pairs were measured one at a time (what a level above the switches is judged on)


def _verdicts(count: np.ndarray, total: np.ndarray, squares: np.ndarray, min_ratio: float | np.ndarray,
              t_yes: float = T_YES):
    """(t, ratio, verdict code) of boundaries from their margins' counts, sums and sums of squares:
    yes (2), it stands (T_YES standard errors, and the mean margin's ratio min_ratio or more); no (0),
    too few margins to speak for it, held-out margins under T_NONE standard errors, or a boundary
    that large ruled out (the mean margin T_MAYBE standard errors up is below min_ratio); maybe (1),
    between: the data neither show it nor rule it out."""
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = total / count
        var = np.maximum(squares - count * mean ** 2, 0.0) / (count - 1)
        se = np.sqrt(var / count)
        t = np.where(se > 0, mean / se, np.where(mean > 0, np.inf, np.where(mean < 0, -np.inf, 0.0)))
    ratio = np.exp(mean)
    few = count < MIN_MARGINS
    yes = (t >= t_yes) & (ratio >= min_ratio) & ~few
    no = few | (t < T_NONE) | (mean + T_MAYBE * se < np.log(min_ratio))
    code = np.where(yes, 2, np.where(no, 0, 1))
    return np.where(few, np.nan, t), np.where(few, np.nan, ratio), code


VERDICTS = ("no", "maybe", "yes")


def _group_sums(a: np.ndarray, labels: np.ndarray, k: int) -> np.ndarray:
    """Per row, the sum of its columns of each group (labels -1: in none): O(n^2), not the O(n^2 k)
    of a product with the membership matrix."""
    cols = np.flatnonzero(labels >= 0)
    order = cols[np.argsort(labels[cols], kind="stable")]
    out = np.zeros((len(a), k))
    if not len(order):
        return out
    lab = labels[order]
    starts = np.flatnonzero(np.r_[True, lab[1:] != lab[:-1]])
    out[:, lab[starts]] = np.add.reduceat(a[:, order], starts, axis=1)
    return out


def _prepared(d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distances with 0 where not measured, 1.0 where measured): what _Margins multiplies."""
    f = np.isfinite(d)
    return np.where(f, d, 0.0), f.astype(float)


class _Margins:
    """Each host's mean log distance to each group of a labelling, on one matrix (NaN: no pair)."""

    def __init__(self, d: np.ndarray | tuple[np.ndarray, np.ndarray], labels: np.ndarray, k: int):
        dz, fz = d if isinstance(d, tuple) else _prepared(d)
        ok = labels >= 0
        s, c = _group_sums(dz, labels, k), _group_sums(fz, labels, k)
        self.to = np.full_like(s, np.nan)
        np.divide(s, c, out=self.to, where=c > 0)
        self.labels = labels
        idx = np.flatnonzero(ok)
        self.own = np.full(len(dz), np.nan)
        self.own[idx] = self.to[idx, labels[idx]]


def _labels(groups: list[list[int]], n: int) -> np.ndarray:
    lab = np.full(n, -1, dtype=np.int64)
    for k, g in enumerate(groups):
        lab[g] = k
    return lab


def _refine(d: np.ndarray, groups: list[list[int]], rounds: int = 10) -> list[list[int]]:
    """Each host moved to the group it is nearest on average (a cut of a tree can strand a host
    that one odd pair chained to the wrong side), until none moves. A host alone in its group
    stays unless it is as near another group as that group's hosts are to each other."""
    n, k = len(d), len(groups)
    lab = _labels(groups, n)
    ready = _prepared(d)
    for _ in range(rounds):
        m = _Margins(ready, lab, k)
        size = np.bincount(lab, minlength=k)
        ok = np.isfinite(m.own)
        cnt = np.bincount(lab[ok], minlength=k)
        inner = np.full(k, np.nan)
        np.divide(np.bincount(lab[ok], weights=m.own[ok], minlength=k), cnt, out=inner, where=(cnt > 0) & (size > 1))
        to = np.where(np.isfinite(m.to), m.to, np.inf)
        best = np.argmin(to, axis=1)
        near = to[np.arange(n), best]
        own = np.where(np.isfinite(m.own), m.own, np.inf)
        move = (best != lab) & np.isfinite(near) & (
            ((size[lab] > 2) & (near < own)) |
            ((size[lab] == 1) & np.isfinite(inner[best]) & (near <= np.where(np.isfinite(inner[best]), inner[best], -np.inf))))
        if not move.any():
            break
        # the hosts that gain most move first, and a group keeps two hosts at least
        gain = near[move] - own[move]
        for i in np.flatnonzero(move)[np.argsort(gain)]:
            g = lab[i]
            if size[g] > 2 or size[g] == 1:
                lab[i] = best[i]
                size[g] -= 1
                size[best[i]] += 1
    return sorted((sorted(np.flatnonzero(lab == g).tolist()) for g in range(k) if (lab == g).any()),
                  key=lambda g: g[0])


def _cuts(d: np.ndarray, most: int) -> list[list[list[int]]]:
    """The tree's partitions at its MAX_CANDIDATES widest gaps between merge heights (a real tree
    has a few levels; the other gaps are noise), of 2 to `most` groups, each refined, without repeats."""
    n = len(d)
    if np.isfinite(d).sum() == 0:
        return []
    tree = _tree(d)
    h = np.array([m[2] for m in tree.merges])
    top = int(np.isfinite(h).sum())
    gaps = np.diff(h[:top]) if top > 1 else np.empty(0)
    after = {int(k) for k in np.argsort(-gaps, kind="stable")[:MAX_CANDIDATES] if 2 <= n - 1 - k <= most}
    after |= {k for k in range(top, len(h)) if 2 <= n - 1 - k <= most}    # hosts with nothing measured
    g = _Groups(n)
    parts, seen = [], set()
    for k, (a, b, _, _) in enumerate(tree.merges):
        g.join(a, b)
        if k in after:
            p = _refine(d, g.partition())
            key = tuple(map(tuple, p))
            if len(p) > 1 and key not in seen:
                seen.add(key)
                parts.append(p)
    return parts


def _judge_layout(groups: list[list[int]], tests: list[tuple[np.ndarray, np.ndarray]],
                  evidence: list[tuple[np.ndarray, np.ndarray]], hosts: list[str], metric: str,
                  min_ratio: float, t_yes: float = T_YES, alone_ratio: float | None = None) -> Candidate:
    """A candidate judged on the test matrices, each (distances, the base index of each of its
    hosts). A boundary that the evidence (other measurements, made to decide) covers with
    MIN_MARGINS margins is judged on the evidence alone, at alone_ratio: the first matrix's pairs that left it
    open were measured under another load and would pull it back."""
    n, k = len(hosts), len(groups)
    lab = _labels(groups, n)

    def sums(mats):
        """Per (group of the host, other group): the margins' count, sum and sum of squares, and
        every margin with its host (for naming the weakest)."""
        c, t, q = (np.zeros((k, k)) for _ in range(3))
        rows = []
        for d, idx in mats:
            m = _Margins(d, lab[idx], k)
            mg = m.to - m.own[:, None]
            ok = np.isfinite(mg) & (lab[idx] >= 0)[:, None]
            member = np.zeros((len(idx), k))
            member[np.flatnonzero(lab[idx] >= 0), lab[idx][lab[idx] >= 0]] = 1.0
            c += member.T @ ok
            t += member.T @ np.where(ok, mg, 0.0)
            q += member.T @ np.where(ok, mg * mg, 0.0)
            rows.append((idx, mg))
        return c + c.T, t + t.T, q + q.T, rows

    (c0, t0, q0, r0), (c1, t1, q1, r1) = sums(tests), sums(evidence)
    own_ev = c1 >= MIN_MARGINS
    c, tot, sq = (np.where(own_ev, e, b + e) for b, e in ((c0, c1), (t0, t1), (q0, q1)))
    # a boundary judged on the evidence alone needs alone_ratio (default the square of the ratio):
    # the deciding measurements measure pairs alone, where on a virtual cluster a pair's rate
    # depends on its ranks' CPUs as much as on its path (16 nodes of one switch split 10 / 6 at
    # 1.20x and 3.5 standard errors on such a run)
    t, ratio, code = _verdicts(c, tot, sq, np.where(own_ev, alone_ratio or min_ratio ** 2, min_ratio), t_yes)
    iu, ju = np.triu_indices(k, 1)
    if not len(iu):
        return Candidate(metric, [[hosts[i] for i in g] for g in groups], "no", [])
    key = np.lexsort((np.nan_to_num(t[iu, ju], nan=-1.0, posinf=1e300), code[iu, ju]))
    bounds = []
    for x in key[:WEAKEST]:
        g, h = int(iu[x]), int(ju[x])
        vals = []
        for idx, mg in (r1 if own_ev[g, h] else r0 + r1):
            for a, b in ((g, h), (h, g)):
                mine = np.flatnonzero(lab[idx] == a)
                vals += [(mg[i, b], int(idx[i])) for i in mine if np.isfinite(mg[i, b])]
        vals.sort()
        weak = list(dict.fromkeys(i for _, i in vals))
        named = [hosts[i] for i in weak if lab[i] == g][:WEAKEST] + [hosts[i] for i in weak if lab[i] == h][:WEAKEST]
        bounds.append(Boundary(metric, [hosts[i] for i in groups[g]], [hosts[i] for i in groups[h]], int(c[g, h]),
                               float(ratio[g, h]), float(t[g, h]), VERDICTS[code[g, h]], named))
    return Candidate(metric, [[hosts[i] for i in g] for g in groups], bounds[0].verdict, bounds)


FOLDS = 8          # the pairs are dealt into this many folds: a fold's candidates are made without its pairs
FEW_FOLDS = (256, 2)   # from this many hosts on, this many folds: plenty of pairs in each, and a tree costs O(n^2)


def _fold_count(n: int) -> int:
    return FEW_FOLDS[1] if n >= FEW_FOLDS[0] else FOLDS


def _folds(n: int) -> np.ndarray:
    """Each host pair's fold, at random but fixed (the same for the same n, so that an inference
    repeats) and symmetric: not by index, since a sampled design's shifts would then put every pair
    of one shift in one fold."""
    r = np.random.default_rng(n).integers(0, _fold_count(n), (n, n))
    r = np.triu(r, 1)
    return r + r.T
def _same(a: list[list[str]], b: list[list[str]]) -> bool:
    return {frozenset(g) for g in a} == {frozenset(g) for g in b}


@dataclass
class _MetricAnswer:
    metric: str
    answer: str                     # layout | one switch | undecided
    layout: Candidate | None        # the layout decided
    candidates: list[Candidate]     # undecided: the layouts still open (the coarser first)
    strongest: Candidate | None     # one switch: the strongest candidate, and what it lacked


def _metric_answer(metric: str, d: np.ndarray, evidence: list[tuple[np.ndarray, np.ndarray]], hosts: list[str],
                   min_ratio: float, t_yes: float = T_YES) -> _MetricAnswer:
    """Each half of the pairs makes candidates (its tree's cuts), the other half (and any evidence)
    judges them: a cut that noise made in one half has no edge in the other, which is what lets a
    t test of the held-out margins stand without a threshold inflated for the selection. The
    layout is the finest candidate whose every boundary stands (yes), decided when no other
    candidate as fine also stands, no finer one has evidence for it (maybe), and every host is,
    over all its pairs, nearer its own group than any other; one switch when no candidate has any
    evidence; undecided otherwise, between the candidates still open."""
    n = len(hosts)
    base = np.arange(n)
    cands: list[Candidate] = []
    if n < SMALL:
        # too few pairs to hold any out: judged on the pairs they were made from, each boundary
        # needing the square of the ratio (a cut of noise picks its widest gap)
        for p in _cuts(d, max(2, n // 2)):
            c = _judge_layout(p, [(d, base)], evidence, hosts, metric, min_ratio ** 2, t_yes,
                              alone_ratio=min_ratio ** 2)
            c.source = "all"
            cands.append(c)
    else:
        fold = _folds(n)
        made: dict[tuple, tuple[list[list[int]], set[int]]] = {}
        for f in range(_fold_count(n)):
            for p in _cuts(np.where(fold == f, np.nan, d), min(MAX_GROUPS, n // 2)):
                made.setdefault(tuple(map(tuple, p)), (p, set()))[1].add(f)
        for p, folds in made.values():
            # judged on the pairs of the folds it was made without, each pair once
            c = _judge_layout(p, [(np.where(np.isin(fold, list(folds)), d, np.nan), base)], evidence, hosts,
                              metric, min_ratio, t_yes)
            c.source = ",".join(str(f + 1) for f in sorted(folds))
            cands.append(c)
    unjudged: list[Candidate] = []      # a deciding measurement's layouts that only it has judged
    for k, (de, idx) in enumerate(evidence):
        # A later measurement's own layouts are candidates too: the first matrix's may not hold
        # the true one (its noise can hide a boundary that pairs measured alone show, 4.6x out
        # here). Judged without the measurement that made them, as a fold's are, each boundary at
        # the square of the ratio: on a virtual cluster a pair's rate also depends on which CPUs
        # its two ranks happen to run on, 2x apart, in patterns that can hold for a run (a host
        # 1.2x slower). One that stands on its own measurement keeps "one switch" from being said
        # until another measurement judges it, whatever the first matrix says: that matrix is
        # what the deciding measurements were taken to overrule.
        if len(idx) < n:
            # placing the hosts it did not measure by the first matrix would make a candidate of
            # that matrix, then judged on it (a 40-node chain as 5 switches by latency, at 4.2
            # standard errors): only a run of every host offers layouts of its own
            continue
        for p in _cuts(de, max(2, len(idx) // 2)):
            full = sorted((sorted(int(idx[x]) for x in g) for g in p), key=lambda g: g[0])
            c = _judge_layout(full, [(d, base)], _without(evidence, k), hosts, metric, min_ratio ** 2, t_yes,
                              alone_ratio=min_ratio ** 2)
            c.source = f"evidence {k + 1}"
            cands.append(c)
            if c.verdict == "no" and _judge_layout(full, [(d, base)], [evidence[k]], hosts, metric, min_ratio,
                                                   t_yes).verdict == "yes":
                unjudged.append(replace(c, verdict="maybe"))
    yes = [c for c in cands if c.verdict == "yes"]
    one = Candidate(metric, [list(hosts)], "one switch", [])
    if not yes:
        maybe = [c for c in cands if c.verdict == "maybe"] + unjudged
        if maybe:
            return _MetricAnswer(metric, "undecided", None, [one] + _distinct(maybe), None)
        # a candidate with too few held-out margins to judge (a sampled matrix whose rounds were cut
        # short: 64 nodes of 4 switches read as one) was not ruled out: no evidence is not one switch
        thin = [c for c in cands if c.boundaries and not math.isfinite(c.boundaries[0].t)]
        if thin:
            return _MetricAnswer(metric, "undecided", None, [one] + _distinct(thin), None)
        strongest = max(cands, key=lambda c: c.boundaries[0].t if c.boundaries and
                        math.isfinite(c.boundaries[0].t) else -1, default=None)
        return _MetricAnswer(metric, "one switch", None, [], strongest)
    best = max(yes, key=lambda c: (len(c.groups), c.boundaries[0].t if c.boundaries else 0))
    k = len(best.groups)
    rivals = [c for c in yes if len(c.groups) == k and not _same(c.groups, best.groups)]
    rivals += [c for c in cands if c.verdict == "maybe" and len(c.groups) > k]
    moved = _misfits(d, best, hosts, evidence)
    if moved is not None:
        rivals.append(_judge_layout(moved, [(d, base)], evidence, hosts, metric, min_ratio, t_yes))
    for split, made_by in _splits_seen(d, best, [(d, base)] + evidence, hosts, min_ratio):
        # a split seen in a later measurement is judged without it (as its layouts are, above)
        rivals.append(_judge_layout(split, [(d, base)], _without(evidence, made_by - 1), hosts, metric, min_ratio,
                                    t_yes))
    rivals = [c for c in rivals if c.verdict != "no"]     # ruled out, even on the pairs that made it
    if not rivals:
        return _MetricAnswer(metric, "layout", best, [], None)
    return _MetricAnswer(metric, "undecided", None, _distinct([best] + rivals), None)


def _without(evidence: list, k: int) -> list:
    """The evidence less its k-th measurement (k < 0: all of it)."""
    return evidence[:k] + evidence[k + 1:] if k >= 0 else evidence


def _splits_seen(d: np.ndarray, cand: Candidate, evidence: list[tuple[np.ndarray, np.ndarray]], hosts: list[str],
                 min_ratio: float) -> list[tuple[list[list[int]], int]]:
    """The candidate with one group split in two wherever a measurement (the matrix itself, or one
    made to decide) shows a boundary inside it that it does not rule out, each with the index of
    that measurement in `evidence`: the held-out tests confirm a candidate's boundaries, but a
    layout too coarse has those too, and a finer one made of small switches may have too few
    held-out margins to be judged. The split is the measurement's own tree's, seen on the pairs
    it was made from: leaning towards seeing one, which can only keep a layout open; the group's
    hosts it did not measure go with the half they are nearer on `d`."""
    index = {h: i for i, h in enumerate(hosts)}
    groups = [[index[h] for h in g] for g in cand.groups]
    out = []
    for source, (de, idx) in enumerate(evidence):
        pos = {int(b): k for k, b in enumerate(idx)}
        for gi, g in enumerate(groups):
            inside = [pos[i] for i in g if i in pos]
            if len(inside) < 4:
                continue
            sub = de[np.ix_(inside, inside)]
            if np.isfinite(sub).sum() < 2 * len(inside):
                continue
            parts = [p for p in _cuts(sub, 2) if len(p) == 2 and min(map(len, p)) >= 2]
            if not parts:
                continue
            halves = [[int(idx[inside[x]]) for x in part] for part in parts[0]]
            m = _Margins(sub, _labels(parts[0], len(inside)), 2)
            mg = np.concatenate([m.to[parts[0][0], 1] - m.own[parts[0][0]], m.to[parts[0][1], 0] - m.own[parts[0][1]]])
            mg = mg[np.isfinite(mg)]
            if len(mg) < MIN_MARGINS:
                continue
            mean, se = float(mg.mean()), float(mg.std(ddof=1)) / math.sqrt(len(mg))
            t = mean / se if se > 0 else (math.inf if mean > 0 else 0.0)
            if t < T_NONE or math.exp(float(np.median(mg))) < min_ratio:
                continue      # a boundary smaller than a switch's even on the pairs the split was made from
            rest = [i for i in g if i not in pos]
            for i in rest:     # the unmeasured hosts go with the half they are nearer on d
                near = [np.nanmean(d[i, h]) if np.isfinite(d[i, h]).any() else np.inf for h in halves]
                halves[int(np.argmin(near))].append(i)
            out.append((sorted([sorted(x) for k, x in enumerate(groups) if k != gi] + [sorted(h) for h in halves]),
                        source))
    return out


def _misfits(d: np.ndarray, cand: Candidate, hosts: list[str],
             evidence: list[tuple[np.ndarray, np.ndarray]] = ()) -> list[list[int]] | None:
    """The candidate with every host that is not clearly nearer its own group than the next
    nearest (Welch's t over its pairs to either under T_HOST) moved to that group; None when every
    host is. The held-out tests judge boundaries by whole groups, where one host on the wrong side
    weighs little: this is what keeps a host whose pairs are too few or too noisy to place from
    being placed as fact. A host that a later measurement (evidence) covers with two pairs or more
    to either group is judged on that measurement's pairs alone, as a boundary is."""
    index = {h: i for i, h in enumerate(hosts)}
    groups = [[index[h] for h in g] for g in cand.groups]
    lab = _labels(groups, len(hosts))
    m = _Margins(d, lab, len(groups))
    other = np.where(np.isfinite(m.to), m.to, np.inf)
    other[np.arange(len(hosts)), lab] = np.inf
    nearest = np.argmin(other, axis=1)
    odd = []

    runs = [(de, {int(b): k for k, b in enumerate(idx)}) for de, idx in evidence]   # each run and its hosts' rows

    def pairs_to(i: int, group: list[int]) -> list[np.ndarray]:
        """i's distances to the group's other hosts: in d, then in each evidence matrix holding i."""
        out = [d[i, [j for j in group if j != i]]]
        for de, pos in runs:
            if i in pos:
                out.append(de[pos[i], [pos[j] for j in group if j != i and j in pos]])
        return [x[np.isfinite(x)] for x in out]

    for i in range(len(hosts)):
        if len(groups[lab[i]]) < 2 or not np.isfinite(other[i, nearest[i]]):
            continue               # alone in its group, or nothing measured to another
        measured = [(a, b) for a, b in zip(pairs_to(i, groups[lab[i]]), pairs_to(i, groups[nearest[i]]))
                    if len(a) >= 2 and len(b) >= 2]
        if not measured:
            continue               # too few pairs for a test (a switch of two, a sampled design's shifts)
        mine, theirs = measured[-1]     # the latest measurement that covers it
        se = math.sqrt(mine.var(ddof=1) / len(mine) + theirs.var(ddof=1) / len(theirs))
        gap = float(theirs.mean() - mine.mean())
        if (gap / se if se > 0 else (math.inf if gap > 0 else 0.0)) < T_HOST:
            odd.append(i)
    if not odd:
        return None
    lab[odd] = nearest[odd]
    return [sorted(np.flatnonzero(lab == g).tolist()) for g in range(len(groups)) if (lab == g).any()]


def _distinct(cands: list[Candidate]) -> list[Candidate]:
    out: list[Candidate] = []
    for c in sorted(cands, key=lambda c: len(c.groups)):
        if not any(_same(c.groups, o.groups) for o in out):
            out.append(c)
    return out


def _deciding_hosts(cands: list[Candidate], hosts: list[str]) -> list[str]:
    """The hosts whose pairs would decide between the candidates: those the candidates place
    apart differently, then the weakest hosts of every contested boundary, at most DECIDE_HOSTS."""
    order = {h: i for i, h in enumerate(hosts)}
    where = [{h: k for k, g in enumerate(c.groups) for h in g} for c in cands]
    moved = _moved(cands, order)
    # a host that moves, and two of its neighbours in every candidate: the ones it is compared with
    # (a host is placed on two pairs or more to either group, _misfits); then the weakest hosts
    picked = list(dict.fromkeys(moved[:DECIDE_HOSTS // 3]))
    for h in list(picked):
        for c, w in zip(cands, where):
            picked += [x for x in c.groups[w[h]] if x != h][:2]
    for b in sorted((b for c in cands for b in c.boundaries), key=lambda b: b.verdict == "yes"):
        picked += b.weakest
    picked = list(dict.fromkeys(picked))[:DECIDE_HOSTS]
    if len(picked) < 4:
        picked = list(dict.fromkeys(picked + [h for c in cands for g in c.groups for h in g[:2]]))[:max(4, len(picked))]
    return sorted(picked, key=order.get)


def _moved(cands: list[Candidate], order: dict[str, int]) -> list[str]:
    """The hosts that the candidates place differently, in host order: against the first
    candidate, each group of another is matched to the first's group it shares most hosts with,
    and the hosts of either that the other lacks have moved (not every host of a group that lost
    one: 13 hosts of a switch do not move because its 14th may be elsewhere)."""
    out: list[str] = []
    for c in cands[1:]:
        for g in c.groups:
            best = max(cands[0].groups, key=lambda b: len(set(b) & set(g)))
            out += [h for h in g if h not in best] + [h for h in best if h not in g]
    return sorted(set(out), key=order.get)


@dataclass
class Inference:
    """One of three answers (`answer`): "layout" (groups and the levels above them, with the
    boundaries that decided them), "one switch" (no candidate has any evidence), or "undecided"
    (`candidates`: the layouts still open, `decide`: the hosts whose pairs would decide)."""
    answer: str
    groups: list[list[str]]           # leaf switches (undecided: the coarsest candidate, used only when forced)
    decided_by: str | None            # metric whose layout is reported; None: no layout decided
    note: str = ""
    # Bottom-up: levels[0] == groups, the last level is all hosts in one group;
    # parents[k][g] is the index in levels[k + 1] of the group holding levels[k][g].
    levels: list[list[list[str]]] = field(default_factory=list)
    parents: list[list[int]] = field(default_factory=list)
    boundaries: list[Boundary] = field(default_factory=list)   # the layout's weakest (one switch: the strongest candidate's)
    candidates: list[Candidate] = field(default_factory=list)  # undecided: the layouts still open
    decide: list[str] = field(default_factory=list)            # undecided: the hosts to measure again, all pairs
    pairs: list[tuple[str, str]] = field(default_factory=list)  # undecided: the pairs of those the candidates class apart
    cuts: list[MetricCut] = field(default_factory=list)        # the levels above the switches
    inconsistent_pairs: list[tuple[str, str]] = field(default_factory=list)  # far pairs inside a group
    evidence: list[str] = field(default_factory=list)          # the other measurements that joined the tests

    def to_dict(self) -> dict:
        """JSON-safe: a statistic that is infinite (no noise at all) or was not computed is None."""
        def clean(x):
            if isinstance(x, float):
                return x if math.isfinite(x) else None
            if isinstance(x, dict):
                return {k: clean(v) for k, v in x.items()}
            if isinstance(x, (list, tuple)):
                return [clean(v) for v in x]
            return x
        return {**clean(asdict(self)), "switches_decided": self.switches_decided}

    @property
    def decided(self) -> bool:
        return self.answer != "undecided"

    @property
    def switches_decided(self) -> bool:
        """The leaf switches are known (what placement needs): decided, or undecided only about the
        levels above them."""
        return self.decided or (len(self.candidates) > 1 and
                                all(_same(c.groups, self.candidates[0].groups) for c in self.candidates))


ANSWERS = ("layout", "one switch", "undecided")


def infer_groups(latency: Matrix | None, bandwidth: Matrix | None, hosts: list[str], *,
                 min_ratio: float = 1.2, min_significance: float = T_YES, min_level_significance: float = 2.0,
                 min_separation: float = 1.0, evidence: Sequence[Evidence] = (), alone: bool = False) -> Inference:
    """Group hosts into switches and switches into a tree; latency in seconds, bandwidth in
    bytes/s, either may be None, and so may any entry (a pair not measured). `evidence`: other
    all-pairs measurements of some of the hosts, whose margins join the tests; alone: the
    matrices' pairs were measured one at a time (else a level above the switches that they show
    stays open until evidence measured so covers every switch pair: _layout).
    min_ratio: the smallest far/near ratio a boundary needs (the typical host's); min_significance:
    the standard errors its held-out host margins need;
    min_level_significance, min_separation: the tests of a level above the switches (see _upper)."""
    n = len(hosts)
    for name, m in (("latency", latency), ("bandwidth", bandwidth)):
        if m is not None and (len(m) != n or any(len(row) != n for row in m)):
            raise ValueError(f"{name} matrix is not {n} x {n}")
    one = [list(hosts)]
    if n < 2:
        return Inference("one switch", one, None, note="one host: nothing to group", levels=[one])
    index = {h: i for i, h in enumerate(hosts)}
    answers: dict[str, _MetricAnswer] = {}
    dists: dict[str, np.ndarray] = {}
    alone_d: dict[str, np.ndarray | None] = {}
    for metric, m in (("bandwidth", bandwidth), ("latency", latency)):
        d = _distances(m, n, invert=metric == "bandwidth")
        if d is None or not np.isfinite(d).any():
            continue
        ev = []
        for e in evidence:
            em = e.bandwidth if metric == "bandwidth" else e.latency
            idx = [index.get(h, -1) for h in e.hosts]
            de = _distances(em, len(e.hosts), invert=metric == "bandwidth", best=e.alone) if em else None
            if de is not None and min(idx) >= 0:
                ev.append((de, np.array(idx), e.alone))
        dists[metric] = d
        alone_d[metric] = _alone_distances(ev, n)
        answers[metric] = _metric_answer(metric, d, [(de, idx) for de, idx, _ in ev], hosts, min_ratio,
                                         min_significance)
    used = [e.source for e in evidence]
    if not answers:
        return _too_few(hosts, hosts, [], used)
    layouts = [a for a in answers.values() if a.answer == "layout"]
    if len(layouts) == 2 and not _same(layouts[0].layout.groups, layouts[1].layout.groups):
        kept = _not_reversed(layouts, dists, hosts, min_ratio)
        if kept is None:
            cands = [a.layout for a in layouts]
            return _undecided(cands, hosts, used, "bandwidth and latency decided different layouts")
        layouts, refused = [kept[0]], kept[1]
    else:
        refused = ""
    if layouts:
        # one metric's layout stands where the other saw none or could not tell (on links that are
        # not oversubscribed only latency shows the switches; on a shared machine latency is noisy)
        a = layouts[0]
        inf = _layout(a, dists[a.metric], alone_d[a.metric], alone, hosts, used, min_ratio, min_level_significance,
                      min_separation)
        return replace(inf, note=inf.note + refused) if refused else inf
    open_ = [a for a in answers.values() if a.answer == "undecided"]
    if open_:
        cands = _distinct([c for a in open_ for c in a.candidates])
        return _undecided(cands, hosts, used, "")
    strongest = [a.strongest for a in answers.values() if a.strongest]
    partners = np.max([np.isfinite(d).sum(axis=1) for d in dists.values()], axis=0)
    few = [hosts[i] for i in np.flatnonzero(partners < min(MIN_PARTNERS, n - 1))]
    if few:
        # a host measured with fewer partners cannot be placed at all: that no layout shows is then
        # the sample's size, not the network's (a cut-short sampled matrix of 64 hosts read as one switch)
        return _too_few(few, hosts, strongest, used)
    note = "no candidate layout has evidence on the pairs it was not made from: the hosts look like one switch"
    bounds = [c.boundaries[0] for c in strongest if c.boundaries]
    return Inference("one switch", one, None, note, [one], boundaries=bounds, evidence=used)


def _not_reversed(layouts: list[_MetricAnswer], dists: dict[str, np.ndarray], hosts: list[str],
                  min_ratio: float) -> tuple[_MetricAnswer, str] | None:
    """Of two metrics' different layouts, the one whose grouping the other metric does not reverse,
    with a note on the refused one; None when neither or both are reversed. A switch's hosts are
    never farther apart than hosts across its trunk on either metric (a trunk adds hops and shares
    a link), so a layout whose groups the other metric shows significantly farther apart inside
    than across (T_MAYBE standard errors in Student's tail, min_ratio) is that metric's noise:
    among 4 hosts, latency noise on a shared machine stood as a 2 + 2 layout in about 1 draw of 6
    against bandwidth's."""
    index = {h: i for i, h in enumerate(hosts)}
    reversed_: list[Boundary | None] = []
    for a, other in zip(layouts, layouts[::-1]):
        groups = [[index[h] for h in g] for g in a.layout.groups]
        c = _judge_layout(groups, [(dists[other.metric], np.arange(len(hosts)))], [], hosts, other.metric, min_ratio)
        worst = min((b for b in c.boundaries if not math.isnan(b.t)), key=lambda b: b.t, default=None)
        reversed_.append(worst if worst and _normal(worst.t, worst.hosts - 1) <= -T_MAYBE
                         and worst.ratio <= 1 / min_ratio else None)
    if (reversed_[0] is None) == (reversed_[1] is None):
        return None
    k = 0 if reversed_[0] is None else 1
    b, lost = reversed_[1 - k], layouts[1 - k]
    note = (f"; {lost.metric}'s layout ({len(lost.layout.groups)} groups) refused: {layouts[k].metric} shows its "
            f"groups' hosts {1 / b.ratio:.2f}x farther apart inside than across ({-b.t:.1f} standard errors)")
    return layouts[k], note


def _layout(a: _MetricAnswer, d: np.ndarray, alone_d: np.ndarray | None, alone: bool, hosts: list[str],
            used: list[str], min_ratio: float, min_level_significance: float, min_separation: float) -> Inference:
    """The switches decided; the levels above them judged on pairs measured one at a time. In a
    matrix whose pairs measure several at once, a pair across switches shares its switch's trunk
    with as many of the round's pairs as that switch's hosts take part in: a bigger switch's pairs
    measure slower, as a level above it would make them (24 nodes on switches of 8, 6, 6 and 4
    under one spine put the 8 apart from the rest, at 4 pairs at once). So a level such a matrix
    shows is open until every switch pair is measured alone (`evidence` with alone=True, or the
    matrix itself when it was)."""
    n = len(hosts)
    index = {h: i for i, h in enumerate(hosts)}
    leaf = sorted((sorted(index[h] for h in g) for g in a.layout.groups), key=lambda g: g[0])
    limits = (min_ratio, min_separation, min_level_significance)
    on_alone = alone_d is not None and len(leaf) >= 3 and _covers(alone_d, leaf)
    upper, above = _upper(alone_d if on_alone else d, leaf, a.metric, limits)
    if upper and not (alone or on_alone):
        return _levels_open(a, leaf, upper, hosts, used)
    levels_idx = [leaf, *upper, [list(range(n))]]
    levels = [[[hosts[i] for i in g] for g in part] for part in levels_idx]
    parents = []
    for lower, up in zip(levels_idx, levels_idx[1:]):
        where = {i: p for p, g in enumerate(up) for i in g}
        parents.append([where[g[0]] for g in lower])
    # far pairs inside a group: farther than the group's nearest other group is on average
    lab = _labels(leaf, n)
    m = _Margins(d, lab, len(leaf))
    near_other = np.array([np.nanmin(np.where(np.arange(len(leaf)) == lab[i], np.nan, m.to[i]))
                           if len(leaf) > 1 and np.isfinite(m.to[i]).sum() > 1 else np.inf for i in range(n)])
    odd = [(hosts[i], hosts[j]) for g in leaf for x, i in enumerate(g) for j in g[x + 1:]
           if np.isfinite(d[i, j]) and d[i, j] > min(near_other[i], near_other[j])]
    note = _switches_note(a, len(leaf))
    if len(levels) > 2:
        note += "; above them " + ", then ".join(f"{len(lv)} groups" for lv in levels[1:-1])
    if on_alone:
        note += f"; {'levels' if upper else 'no level'} above the switches, judged on every switch pair measured alone"
    unmeasured = [hosts[i] for i in range(n) if not np.isfinite(d[i]).any()]
    if unmeasured:
        note += f"; no pair measured with {', '.join(unmeasured)}: each left a group of its own"
    return Inference("layout", levels[0], a.metric, note, levels, parents, a.layout.boundaries, cuts=above,
                     inconsistent_pairs=odd, evidence=used)


def _switches_note(a: _MetricAnswer, switches: int) -> str:
    """The decided switches in words, with the weakest boundary that decided them."""
    b = a.layout.boundaries[0] if a.layout.boundaries else None
    note = f"{switches} switches, decided by {a.metric}"
    if b:
        note += (f": the weakest boundary {b.ratio:.2f}x, {b.t:.1f} standard errors over {b.hosts} host margins "
                 "(pairs the layout was not made from)")
    return note


LEVEL_PAIRS = 2    # pairs measured alone between every two switches, at least, for the levels to be judged on them


def _covers(d: np.ndarray, leaf: list[list[int]]) -> bool:
    """Whether d measured LEVEL_PAIRS pairs or more between every two switches."""
    count = _block_sums(d, leaf)[1]
    return bool((count[~np.eye(len(leaf), dtype=bool)] >= LEVEL_PAIRS).all())


def _alone_distances(evidence: list[tuple[np.ndarray, np.ndarray, bool]], n: int) -> np.ndarray | None:
    """n x n: the mean log distance of each pair over the evidence measured one pair at a time
    (NaN where none measured it); None without such evidence."""
    total, count = np.zeros((n, n)), np.zeros((n, n))
    for de, idx, alone in evidence:
        if alone:
            ok = np.isfinite(de)
            total[np.ix_(idx, idx)] += np.where(ok, de, 0.0)
            count[np.ix_(idx, idx)] += ok
    if not count.any():
        return None
    out = np.full((n, n), np.nan)
    np.divide(total, count, out=out, where=count > 0)
    return out


def _levels_open(a: _MetricAnswer, leaf: list[list[int]], upper: list[list[list[int]]], hosts: list[str],
                 used: list[str]) -> Inference:
    """Undecided between the switches with the levels the concurrent matrix shows and the switches
    alone under one root: the deciding hosts are two of each switch (one where that would pass
    DECIDE_HOSTS), every pair of them across switches measured one at a time."""
    names = [[hosts[i] for i in g] for g in leaf]
    seen = [[[hosts[i] for i in g] for g in part] for part in upper]
    with_levels = replace(a.layout, groups=names, above=seen)
    flat = replace(a.layout, groups=names, above=[])
    each = 2 if 2 * len(leaf) <= DECIDE_HOSTS else 1
    decide = sorted((h for g in names for h in g[:each]), key={h: i for i, h in enumerate(hosts)}.get)
    switch = {h: k for k, g in enumerate(names) for h in g}
    pairs = [(x, y) for i, x in enumerate(decide) for y in decide[i + 1:] if switch[x] != switch[y]]
    above = ", then ".join(f"{len(lv)} groups" for lv in seen)
    note = _switches_note(a, len(leaf)) + (
        f"; the level above them ({above}) is undecided: its pairs measured several at a time, where a switch's "
        "trunk carries as many of a round's pairs as its hosts take part in; every switch pair measured one pair "
        "at a time decides it")
    return Inference("undecided", names, None, note, [], [], a.layout.boundaries, [flat, with_levels], decide,
                     pairs=pairs, evidence=used)


def _too_few(few: list[str], hosts: list[str], strongest: list[Candidate], used: list[str]) -> Inference:
    """Undecided for want of pairs: `few` hosts have under MIN_PARTNERS measured partners."""
    one = [list(hosts)]
    decide = sorted(dict.fromkeys(few[:DECIDE_HOSTS] + hosts[:max(0, 4 - len(few))]), key=hosts.index)
    note = (f"undecided: too few pairs measured to judge any layout ({len(few)} of {len(hosts)} hosts have fewer "
            f"than {MIN_PARTNERS} measured partners)")
    return Inference("undecided", one, None, note, [], [], [], [Candidate("all", one, "maybe", [])] + strongest,
                     decide, pairs=[(a, b) for x, a in enumerate(decide) for b in decide[x + 1:]], evidence=used)


SHOWN = 8      # candidates named in an undecided answer's note (all are in its JSON)


def _undecided(cands: list[Candidate], hosts: list[str], used: list[str], why: str) -> Inference:
    real = [c for c in cands if len(c.groups) > 1]
    decide = _deciding_hosts(real, hosts)
    shown = ", ".join(f"{len(c.groups)} groups" if len(c.groups) > 1 else "one switch" for c in cands[:SHOWN])
    shown += f" and {len(cands) - SHOWN} more" if len(cands) > SHOWN else ""
    weak = [b for c in real for b in c.boundaries if b.verdict != "yes"]
    note = f"undecided between {len(cands)} candidate layouts ({shown})"
    if why:
        note += f": {why}"
    elif weak:
        w = weak[0]
        note += (f"; the weakest open boundary, of {len(w.a)} and {len(w.b)} hosts: " +
                 (f"{w.ratio:.2f}x, {w.t:.1f} standard errors over {w.hosts} host margins" if math.isfinite(w.t)
                  else f"too few pairs measured across it to judge ({w.hosts} host margins)"))
    return Inference("undecided", cands[0].groups, None, note, [], [], weak[:WEAKEST], cands, decide,
                     pairs=_deciding_pairs(cands, decide), evidence=used)


def _deciding_pairs(cands: list[Candidate], decide: list[str]) -> list[tuple[str, str]]:
    """The pairs of the deciding hosts that one candidate puts on one switch and another apart."""
    where = [{h: k for k, g in enumerate(c.groups) for h in g} for c in cands]
    return [(a, b) for x, a in enumerate(decide) for b in decide[x + 1:]
            if len({w.get(a, -1) == w.get(b, -2) for w in where}) > 1]
