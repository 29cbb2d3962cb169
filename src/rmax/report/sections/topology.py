"""The switch layout inferred from the all-pairs matrix: which of the three answers, and its evidence."""

from __future__ import annotations

from rmax.hostlist import compress
from rmax.report.section import Section, Table, builder
from rmax.store.runs import RunRecord
from rmax.topology.inference_run import answer_line


def _num(x, spec: str) -> str:
    return "—" if x is None else format(x, spec)


@builder("topology")
def topology(runs: list[RunRecord]) -> list[Section]:
    out = []
    for r in runs:
        s = r.summary or {}
        if not s.get("answer"):
            continue
        source = f"{r.params.get('source_kind')} run {str(r.params.get('source'))[:8]}"
        sec = Section(key=f"topology-{r.id[:8]}", title="Switch layout", order=44,
                      lead=f"{answer_line(s, command=False)} (topology run {r.id[:8]}, from {source})")
        if s["answer"] == "layout":
            levels = s.get("levels") or []
            rows = [[f"switch {i}", compress(g), str(len(g))] for i, g in enumerate(s.get("groups") or [], 1)]
            for k, lv in enumerate(levels[1:-1], 2):
                rows += [[f"level {k}, group {i}", compress(g), str(len(g))] for i, g in enumerate(lv, 1)]
            sec.tables.append(Table(["Group", "Hosts", "Hosts (count)"], rows, answer=True))
        elif s["answer"] == "undecided":
            rows = []
            for i, c in enumerate(s.get("candidates") or [], 1):
                what = "; ".join(compress(g) for g in c["groups"])
                what += "".join(f"; above them {len(p)} groups" for p in c.get("above") or [])
                rows.append([str(i), c["metric"], c["verdict"], what])
            sec.tables.append(Table(["Candidate", "Metric", "Verdict", "Switches"], rows, answer=True))
            sec.notes.append(f"to decide, measure every pair of {compress(s.get('decide') or [])} one pair at a time: "
                             f"{s.get('command')} && rmax topology infer (or rmax topology infer --measure)")
        bounds = s.get("boundaries") or []
        if bounds:
            sec.tables.append(Table(
                ["Metric", "Group A", "Group B", "Host margins", "Ratio (median margin)", "Standard errors", "Verdict"],
                [[b["metric"], compress(b["a"]), compress(b["b"]), str(b["hosts"]), _num(b["ratio"], ".2f"),
                  _num(b["t"], ".1f"), b["verdict"]] for b in bounds],
                caption="The weakest boundaries, judged host by host on pairs the layout was not made from"))
        sec.notes.append(s.get("note") or "")
        sec.data[f"topology-{r.id[:8]}"] = [{"run": r.id, "answer": s["answer"], "groups": s.get("groups"),
                                            "levels": s.get("levels"), "decide": s.get("decide"),
                                            "command": s.get("command")}]
        out.append(sec)
    return out
