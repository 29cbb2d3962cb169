"""Spread across nodes: a synchronous code runs at the pace of its slowest node
(Richard et al., I-Cluster), so every per-node metric is compared across nodes and slow nodes
are flagged."""

from __future__ import annotations

import statistics

from rmax.store.runs import RunRecord

SLOW = 0.10   # flagged when this much worse than the median node


def run_metrics(r: RunRecord) -> list[tuple[str, float, str, bool]]:
    """(metric, value, unit, lower_is_better) of one run: its family's figures (Family.metrics);
    none for a run of no family."""
    from rmax.bench.family import loaded

    got = loaded(r)
    if got is None:
        return []
    fam, s = got
    return [(f.key, f.value, f.unit, f.better == "lower") for f in fam.metrics(s)]


def node_spread(runs: list[RunRecord]) -> dict:
    """Per benchmark kind and metric: value on each node, median, and the nodes more than 10% worse.

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
            mid = statistics.median(nodes.values())
            lower_is_better = v["lower"]
            slow = [h for h, x in nodes.items()
                    if mid and ((x > mid * (1 + SLOW)) if lower_is_better else (x < mid * (1 - SLOW)))]
            out[f"{kind}:{metric}"] = {"unit": v["unit"], "median": mid, "nodes": nodes, "slow": slow,
                                       "statistic": "each node's figure; median across nodes"}
    return out
