"""An acceptance (`rmax accept`): each node's verdict, then every fail and undecided verdict with its
figure, target, difference and interval, from the stored summary alone (the report reads the store)."""

from __future__ import annotations

from rmax.report.section import Section, Table, builder
from rmax.store.runs import RunRecord


def _pct(x) -> str:
    return "—" if x is None else f"{100 * x:+.1f}%"


@builder("accept")
def acceptance(runs: list[RunRecord]) -> list[Section]:
    out = []
    for r in runs:
        s = r.summary
        nodes, verdicts = s.get("nodes") or {}, s.get("verdicts") or []
        fleet = s.get("fleet") or {}
        sec = Section(key=f"accept-{r.id[:8]}", title=f"Acceptance {r.id[:8]}", order=5)
        failed = s.get("failed_nodes") or []
        if s.get("shared_note"):
            sec.warnings.append(s["shared_note"])
        if failed:
            sec.warnings.append(f"{len(failed)} node(s) failed: {', '.join(failed)}")
        if s.get("cluster_failed"):
            sec.warnings.append("HPL fell short of rmax's HPL model for this cluster (the (cluster) row)")
        sec.tables.append(Table(["Node", "Class", "Verdict", "Pass", "Fail", "Undecided", "Failed metrics"],
                                [[n, (s.get("classes") or {}).get(n, ""), v["state"], str(v["pass"]), str(v["fail"]),
                                  str(v["undecided"]), "; ".join(v["failed"]) or "—"] for n, v in nodes.items()],
                                f"surveys {', '.join(x[:8] for x in s.get('surveys', []))}; fleet tolerance "
                                f"{100 * fleet.get('lower', 0):g}%, confidence {100 * fleet.get('confidence', 0):g}%",
                                answer=True))
        shown = sorted((v for v in verdicts if v["state"] != "pass"), key=lambda v: (v["state"] != "fail", v["node"]))
        if shown:
            sec.tables.append(Table(["Node", "Metric", "Against", "Verdict", "Value", "Target", "Diff [interval]",
                                     "Noise from", "Why"],
                                    [[v["node"], v["metric"], v["reference"] or v["against"], v["state"],
                                      f"{v['value']:.4g} {v['unit']}", f"{v['target']:.4g} {v['unit']}",
                                      _pct(v["diff"]) + (f" [{_pct(v['interval'][0])}, {_pct(v['interval'][1])}]"
                                                         if v.get("interval") else ""), v["noise"], v["why"]]
                                     for v in shown], "fail and undecided verdicts"))
        passed = [v for v in verdicts if v["state"] == "pass"]
        seen = sorted(abs(v["detectable"]) for v in passed if v.get("detectable") is not None)
        if passed:
            sec.notes.append(f"{len(passed)} verdict(s) pass" + (
                f"; each could have detected a difference of {100 * seen[0]:.1f}% to {100 * seen[-1]:.1f}% "
                "(data/accept_verdicts.csv has every verdict)" if seen else ""))
        sec.data["accept_verdicts"] = [{k: v[k] for k in ("node", "metric", "against", "state", "value", "target", "unit",
                                                          "diff", "interval", "detectable", "noise", "reference", "why")}
                                       for v in verdicts]
        out.append(sec)
    return out
