"""One acceptance: the surveys' figures gathered, every node and metric decided, and the decision
stored as a run of kind `accept` (its params name the surveys; its summary holds every verdict,
which `rmax report` shows); the drain list, and references written from an accepted run."""

from __future__ import annotations

import math
import statistics

from rmax.accept import classes as cls_mod, hpl, links
from rmax.accept.measured import Series, gather
from rmax.accept.references import References, render
from rmax.accept.verdicts import CLUSTER, decide, node_states
from rmax.errors import RmaxError
from rmax.store import Store
from rmax.store.runs import RunRecord



def check_units(series: dict[tuple[str, str], Series], classes: dict[str, str], refs: References) -> None:
    """A reference in another unit than its figure is refused (before anything is stored)."""
    for (node, _), s in series.items():
        ref = refs.find(s.metric, s.base, classes.get(node, ""))
        if ref is not None and ref.unit != s.unit:
            raise RmaxError(f"{ref.describe()} is in {ref.unit}, but {s.metric} is measured in {s.unit}",
                            hint=f"give its value in {s.unit}")


def steps_of(metric: str) -> tuple[str, ...]:
    """The survey steps that measure a verdict's metric ("kind:key"): its family's; a link's, the matrix;
    HPL's, with the steps its model's inputs come from (survey.steps.hpl_inputs)."""
    kind = metric.split(":", 1)[0]
    return (links.STEP,) if kind == links.KIND else hpl.STEPS if kind == "hpl" else (kind,)


def surveys_of(store: Store, ids: str) -> list[RunRecord]:
    """The surveys --from names (ids or prefixes, comma-separated), each once, each a survey."""
    names = [i.strip() for i in ids.split(",") if i.strip()]
    if not 1 <= len(names) <= 100:
        raise RmaxError(f"--from '{ids[:40]}': name 1 to 100 surveys, separated by commas")
    runs = [_latest_survey(store) if n == "latest" else store.get(n) for n in names]
    for r in runs:
        if r.kind != "survey":
            raise RmaxError(f"--from {r.id[:8]} is not a survey but a run of kind {r.kind}",
                            hint="rmax runs list --kind survey")
    if len({r.id for r in runs}) < len(runs):
        raise RmaxError("--from names a survey twice: each survey is one repeat")
    return runs


def _latest_survey(store: Store) -> RunRecord:
    got = store.list(kind="survey", limit=1)
    if not got:
        raise RmaxError("--from latest: the store holds no survey", hint="rmax accept runs one; or rmax survey")
    return got[0]


def evaluate(store: Store, surveys: list[RunRecord], refs: References, declared: links.LinkRate | None = None) -> dict:
    """Every verdict of the surveys' nodes: the accept run's summary (nothing stored). `declared`: the
    nodes' link rate (links.declared), else each NIC's speed."""
    series, infos = gather(store, surveys)
    series.update(links.link_series(store, surveys))
    nodes = sorted({n for n, _ in series} | {h for s in surveys for h in (s.summary.get("nodes") or s.hosts)})
    if not series:
        raise RmaxError("the surveys hold no per-node figure to judge (no node benchmark ran ok)",
                        hint="survey with node steps, e.g. rmax accept --steps inventory,peakflops,stream,dgemm")
    classes = cls_mod.classes(infos, nodes)
    check_units(series, classes, refs)
    rates = links.rates(infos, nodes, declared)
    verdicts = decide(series, classes, refs, rates) + hpl.verdicts(store, surveys, refs.fleet)
    states = node_states(verdicts, nodes + ([CLUSTER] if any(v.node == CLUSTER for v in verdicts) else []))
    sharing = max(int((s.summary.get("plan") or {}).get("sharing") or 1) for s in surveys)
    return {"surveys": [s.id for s in surveys], "nodes": states, "classes": classes, "sharing": sharing,
            **({"shared_note": note} if (note := shared_note(surveys, sharing)) else {}),
            "fleet": {"lower": refs.fleet.lower, "upper": refs.fleet.upper, "confidence": refs.fleet.confidence},
            "references": len(refs.references),
            "link_rates": {n: {"bits": r.bits, "source": r.source} for n, r in sorted(rates.items())},
            "verdicts": [v.as_dict() for v in verdicts],
            "counts": {st: sum(v.state == st for v in verdicts) for st in ("pass", "fail", "undecided")},
            "failed_nodes": sorted(n for n, s in states.items() if s["state"] == "fail" and n != CLUSTER),
            "cluster_failed": states.get(CLUSTER, {}).get("state") == "fail",
            "levels": _levels(series, classes)}


def _levels(series: dict[tuple[str, str], Series], classes: dict[str, str]) -> list[dict]:
    """Per class and metric: the median over the nodes of each node's geometric mean figure, for
    --write-references."""
    by: dict[tuple[str, str], list[Series]] = {}
    for (node, metric), s in series.items():
        by.setdefault((classes.get(node, ""), metric), []).append(s)
    out = []
    for (c, metric), group in sorted(by.items()):
        means = {s.node: math.exp(statistics.mean(math.log(v) for v in s.values if v > 0))
                 for s in group if any(v > 0 for v in s.values)}
        if means:
            out.append({"class": c, "metric": metric, "unit": group[0].unit, "lower_is_better": group[0].lower_is_better,
                        "nodes": means})
    return out


def shared_note(surveys: list[RunRecord], k: int) -> str | None:
    """What the verdicts of `k` > 1 nodes that share one machine mean (their surveys' plans say
    whether the nodes took turns at the per-node steps: survey/turns.py)."""
    if k <= 1:
        return None
    turns = all(p.get("turns") for s in surveys for p in (s.summary.get("plan") or {}).get("steps", [])
                if p.get("where") == "node" and p.get("step") != "inventory")
    if turns:
        return (f"{k} nodes share one machine (a virtual cluster's): they took turns at the per-node steps, each "
                "alone on it, and the network steps shared its cores; nodes of one machine still differ by more than "
                "a real cluster's, so a fleet verdict there needs a wider tolerance (--tolerance)")
    return (f"{k} nodes share one machine's cores (a virtual cluster's) and measured at once: their differences are "
            "partly how the scheduler shared the cores among them, which no repeat removes, and a node slowed below "
            "its share of the cores is not seen; a fleet verdict there needs a wider tolerance (--tolerance)")


def store_accept(store: Store, summary: dict, params: dict, label: str | None) -> RunRecord:
    hosts = sorted(n for n in summary["nodes"] if n != CLUSTER)    # the cluster's verdict is no host's
    with store.start_run("accept", params=params, hosts=hosts, label=label) as run:
        run.update(summary=summary)
    return store.get(run.id)


def drain_reason(node: str, verdicts: list[dict]) -> str:
    """What failed on the node, first figures first (sinfo -R shows the first 20 characters),
    readable and cut short (launch/drain.reason_text)."""
    from rmax.launch.drain import reason_text

    failed = [v for v in verdicts if v["node"] == node and v["state"] == "fail"]
    return reason_text("; ".join(f"{v['metric'].split(' at ')[0]} {100 * v['diff']:+.0f}% vs {v['against']}"
                                 for v in failed), "rmax accept")


def reference_rows(summary: dict, lower: float) -> list[dict]:
    """references.toml rows from an accepted run: each class and metric at the median of its nodes,
    a tolerance of `lower` (a fraction, negative) in the metric's worse direction; nodes that failed
    are left out of the median."""
    failed = set(summary.get("failed_nodes", []))
    rows = []
    for lv in summary["levels"]:
        values = [v for n, v in lv["nodes"].items() if n not in failed]
        if not values:
            continue
        tol = {"upper": -lower} if lv["lower_is_better"] else {"lower": lower}
        rows.append({"metric": lv["metric"], "class": lv["class"], "value": float(f"{statistics.median(values):.4g}"),
                     "unit": lv["unit"], **tol, "note": f"median of {len(values)} node(s)"})
    return rows


def references_text(summary: dict, accept_id: str, lower: float, fleet) -> str:
    return render(reference_rows(summary, lower), fleet,
                  f"references written by `rmax accept --write-references` from accept run {accept_id[:8]}\n"
                  f"(surveys {', '.join(s[:8] for s in summary['surveys'])}): each value the median of its class's "
                  f"nodes; tolerance {100 * lower:g}%")
