"""Before and after: two runs (or two surveys) metric by metric, with whether
each change is significant given the raw samples (Welch's t-test).

Runs are paired by kind and host (and, for HPL tests, by their parameters);
a metric is any summary entry with a median, its samples found under the
same key in the run's samples."""

from __future__ import annotations

import math
from dataclasses import dataclass

from rmax.stats import differ_significantly
from rmax.store import Store
from rmax.store.runs import RunRecord
from rmax.survey.spread import _medians


@dataclass
class Change:
    kind: str
    host: str
    metric: str
    unit: str
    a: float
    b: float
    n_a: int
    n_b: int
    p_value: float | None
    significant: bool | None   # None: too few samples to say

    @property
    def change(self) -> float:
        return (self.b - self.a) / self.a if self.a else math.nan

    def as_dict(self) -> dict:
        return {**self.__dict__, "change": self.change}


def _samples(run: RunRecord, metric: str) -> list[float]:
    """The raw samples behind a summary metric: same key path in run.samples, if it holds numbers."""
    node = run.samples
    for part in metric.split("."):
        if not isinstance(node, dict) or part not in node:
            return []
        node = node[part]
    if isinstance(node, dict):
        node = node.get("samples", [])
    return [float(x) for x in node if isinstance(x, (int, float))] if isinstance(node, list) else []


def _pair_key(r: RunRecord) -> tuple:
    host = r.hosts[0] if len(r.hosts) == 1 else ",".join(r.hosts)
    if r.kind == "hpl-test":
        p = r.params
        return (r.kind, host, p.get("code"), p.get("n"), p.get("nb"), p.get("p"), p.get("q"))
    return (r.kind, host)


def _hpl_tests(store: Store, run: RunRecord) -> list[RunRecord]:
    return store.children(run.id) if run.kind == "hpl" else []


def _members(store: Store, run: RunRecord) -> list[RunRecord]:
    if run.kind == "survey":
        kids = store.children(run.id)
        return [k for k in kids if k.status == "ok"] + [t for k in kids for t in _hpl_tests(store, k) if t.status == "ok"]
    return [run] + _hpl_tests(store, run)


def compare(store: Store, a_id: str, b_id: str) -> tuple[RunRecord, RunRecord, list[Change]]:
    a, b = store.get(a_id), store.get(b_id)
    groups: dict[tuple, tuple[list, list]] = {}
    for side, run in ((0, a), (1, b)):
        for r in _members(store, run):
            groups.setdefault(_pair_key(r), ([], []))[side].append(r)
    changes: list[Change] = []
    for key, (ra, rb) in groups.items():
        if not ra or not rb:
            continue
        kind, host = key[0], key[1]
        if kind == "hpl-test":
            # Repeated HPL tests with the same parameters are the samples.
            ga = [r.summary["gflops"] for r in ra]
            gb = [r.summary["gflops"] for r in rb]
            sig, p = differ_significantly(ga, gb)
            label = f"{key[2]} N={key[3]} NB={key[4]} {key[5]}x{key[6]}: GFLOPS"
            changes.append(Change(kind, host, label, "GFLOPS", _mid(ga), _mid(gb), len(ga), len(gb),
                                  None if math.isnan(p) else p, None if math.isnan(p) else sig))
            continue
        ma = {m: (v, u) for m, v, u in _medians(ra[-1].summary)}
        mb = {m: (v, u) for m, v, u in _medians(rb[-1].summary)}
        for metric in ma.keys() & mb.keys():
            sa, sb = _samples(ra[-1], metric), _samples(rb[-1], metric)
            sig, p = differ_significantly(sa, sb)
            changes.append(Change(kind, host, metric, ma[metric][1], ma[metric][0], mb[metric][0], len(sa), len(sb),
                                  None if math.isnan(p) else p, None if math.isnan(p) else sig))
    changes.sort(key=lambda c: (c.kind, c.host, c.metric))
    return a, b, changes


def _mid(xs: list[float]) -> float:
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2
