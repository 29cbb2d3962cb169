"""An MTU experiment: per MTU the medians of its repeats, their range and the verdict against the
baseline MTU (the same cells `rmax experiment mtu` prints)."""

from __future__ import annotations

from rmax.nic.mtu_results import table
from rmax.report.section import Section, Table, builder
from rmax.store.runs import RunRecord


@builder("experiment-mtu")
def experiment(runs: list[RunRecord]) -> list[Section]:
    sec = Section(key="experiment-mtu", title="MTU experiment", order=75)
    data = []
    for r in runs:
        rows = (r.summary or {}).get("results") or []
        if not rows:
            sec.notes.append(f"run {r.id[:8]} ({r.status}) stored no results" + (f": {r.error}" if r.error else ""))
            continue
        columns, cells, caption = table(rows, r.summary.get("repeats") or 0)
        sec.tables.append(Table(columns, cells, f"run {r.id[:8]}: {caption}"))
        sec.notes += [f"MTU {x['mtu']}: {x['error']}" for x in rows if x.get("error")]
        if r.status != "ok":   # partial: a repeat measured nothing (nic/mtu_results.Collector.gaps)
            sec.notes.append(f"run {r.id[:8]} {r.status}: {r.error}")
        data += [{"run": r.id, **{k: v for k, v in x.items() if not isinstance(v, (dict, list))}} for x in rows]
    if data:
        sec.data["experiment_mtu"] = data
    return [sec]
