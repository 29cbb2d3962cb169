"""The survey's own sections: the cluster summary with "what limits this
cluster", and the list of steps (interrupted or failed ones included)."""

from __future__ import annotations

from rmax.report.section import Section, Table
from rmax.store.runs import RunRecord
from rmax.survey.headline import headline, percent_of_peak, shown_metric
from rmax.survey.limits import busy_runs, busy_warning, lead, what_limits


def summary_section(survey: RunRecord, runs: list[RunRecord]) -> Section:
    rows = headline(runs)
    pct = percent_of_peak(rows)
    if pct:
        rows.append(pct)
    sec = Section(key="summary", title="Cluster summary", order=0)
    s = survey.summary
    from rmax.survey.workflow import lost_line, missing_steps, partial_line

    if s.get("lost"):   # first of all: the nodes this survey went on without
        sec.warnings.append(lost_line(s["lost"]))
    if missing_steps(s.get("steps", [])):
        sec.warnings.append(partial_line(s.get("steps", [])))   # then what this survey lacks
    busy = busy_runs(runs)
    if busy:
        sec.warnings.append(busy_warning(busy, len(runs)))
    nodes = s.get("nodes") or sorted({h for r in runs for h in r.hosts})
    sec.notes.append(f"{len(nodes)} node(s): {', '.join(nodes) or 'none recorded'}"
                     + (f"; {s['ranks']} ranks." if s.get("ranks") else "; ranks not recorded (the survey did not finish)."))
    busy_ids = {r.id for r, _ in busy}
    limits = what_limits(rows, runs, busy_ids)
    sec.lead = lead(rows, limits)   # Rmax, % of peak and what limits it, before any table
    sec.tables.append(Table(["What limits this cluster"], [[t] for t in limits] or [["Not enough measurements to say."]],
                            answer=True))

    def caveat(row: dict) -> str:   # a figure from a busy run (HPL % of peak names both of its runs)
        return "; from a run on a busy node" if busy_ids & {row.get("run"), *row.get("runs", ())} else ""

    sec.tables.append(Table(["Metric", "Value", "Unit", "Statistic"],
                            [[shown_metric(r, rows), f"{r['value']:.4g}", r["unit"], r["statistic"] + caveat(r)]
                             for r in rows], answer=True))
    sec.data["headline"] = rows
    return sec


def steps_section(survey: RunRecord, runs: list[RunRecord]) -> Section:
    sec = Section(key="steps", title="Survey steps", order=95)
    steps = survey.summary.get("steps", [])
    rows = [[e["step"], e.get("title", ""), e["status"], f"{e['seconds']:.1f}" if "seconds" in e else "",
             e.get("reason") or e.get("error") or ""] for e in steps]
    if survey.status == "interrupted":
        sec.notes.append("This survey was interrupted; the steps that finished before are shown.")
    sec.tables.append(Table(["Step", "What", "Status", "Seconds", "Note"], rows))
    sec.data["steps"] = steps
    return sec
