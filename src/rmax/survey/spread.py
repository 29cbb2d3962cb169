"""Spread across nodes: a synchronous code runs at the pace of its slowest node
(Richard et al., I-Cluster), so every per-node metric is compared across nodes and slow nodes
are flagged. One value per node has no repeats to test, so a node is flagged only when it stands
out from the others, not from noise: at least three nodes, more than 10 % worse than the median
node, and at least 3 robust standard deviations (1.4826 x MAD, at least 2 % of the median) of the
other nodes away from them. With two nodes neither is "the slow one": they are shown, not flagged.
Nodes that share one machine (a virtual cluster's) are not flagged either: their differences are
how the scheduler shared its cores among them, not the nodes' speed."""

from __future__ import annotations

import statistics

from rmax.stats import robust_sd
from rmax.store.runs import RunRecord

SLOW = 0.10         # flagged when this much worse than the median node
OUTLIER_Z = 3.0     # and this many robust sds of the other nodes away from their median
MIN_SPREAD = 0.02   # the other nodes' sd is taken as at least this fraction of their median
RULE = ("flagged: at least 3 nodes, more than 10% worse than the median node and 3 robust sds "
        "(1.4826 x MAD) beyond the other nodes")
SHARED_RULE = "not flagged: {k} nodes share one machine's cores, so their differences are the scheduler's"


def _slow(nodes: dict[str, float], lower_is_better: bool) -> list[str]:
    if len(nodes) < 3:
        return []
    mid = statistics.median(nodes.values())
    out = []
    for h, x in nodes.items():
        others = [v for k, v in nodes.items() if k != h]
        om = statistics.median(others)
        sd = max(robust_sd(others), MIN_SPREAD * abs(om))
        worse = (x - om) if lower_is_better else (om - x)
        if mid and worse > OUTLIER_Z * sd and ((x > mid * (1 + SLOW)) if lower_is_better else (x < mid * (1 - SLOW))):
            out.append(h)
    return out


def run_metrics(r: RunRecord) -> list[tuple[str, float, str, bool]]:
    """(metric, value, unit, lower_is_better) of one run: its family's figures (Family.metrics),
    a figure's point of measurement (Figure.at) in its name, so that nodes measured at different
    points are not set against each other; none for a run of no family."""
    from rmax.families import loaded

    got = loaded(r)
    if got is None:
        return []
    fam, s = got
    return [(f.key + (f" at {f.at}" if f.at else ""), f.value, f.unit, f.better == "lower") for f in fam.metrics(s)]


def node_spread(runs: list[RunRecord], sharing: int = 1) -> dict:
    """Per benchmark kind and metric: value on each node, median, and the nodes flagged slow (RULE;
    none where `sharing` > 1 nodes share one machine: SHARED_RULE).

    "Worse" is lower for rates and bandwidths and higher for times and latencies."""
    by_kind: dict[str, list[RunRecord]] = {}
    for r in runs:
        if r.status == "ok" and len(r.hosts) == 1 and r.kind not in ("info", "hpl-test"):
            by_kind.setdefault(r.kind, []).append(r)
    out: dict = {}
    for kind, recs in by_kind.items():
        if len({r.hosts[0] for r in recs}) < 2:
            continue
        values: dict[str, dict] = {}
        for r in recs:
            for metric, value, unit, lower in run_metrics(r):
                values.setdefault(metric, {"unit": unit, "lower": lower, "nodes": {}})["nodes"][r.hosts[0]] = value
        for metric, v in values.items():
            nodes = v["nodes"]
            if len(nodes) < 2:
                continue
            out[f"{kind}:{metric}"] = {"unit": v["unit"], "median": statistics.median(nodes.values()), "nodes": nodes,
                                       "slow": _slow(nodes, v["lower"]) if sharing <= 1 else [],
                                       "rule": RULE if sharing <= 1 else SHARED_RULE.format(k=sharing),
                                       "statistic": "each node's figure; median across nodes"}
    return out
