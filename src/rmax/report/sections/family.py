"""The section of any benchmark family: the tables and notes of each run's View (the same
objects `rmax bench NAME` prints), merged across hosts with a Host column, and the
family's plots of all its runs."""

from __future__ import annotations

from rmax.bench.family import Family, StaleSummary
from rmax.inventory import load
from rmax.report import plots
from rmax.report.section import Section, Table
from rmax.store.runs import RunRecord


def family_section(fam: Family, runs: list[RunRecord]) -> list[Section]:
    sec = Section(key=fam.name, title=fam.survey.title if fam.survey else fam.title, order=fam.order)
    got = []
    for r in runs:
        host = r.hosts[0] if len(r.hosts) == 1 else ", ".join(r.hosts)
        try:
            got.append((host, r, fam.load(r)))
        except StaleSummary as e:
            if not r.summary and r.status != "ok":    # it ended before it had a result to store
                sec.notes.append(f"run {r.id[:8]} is not shown: it is {r.status} and stored no result"
                                 + (f" ({r.error})" if r.error else ""))
            else:
                sec.notes.append(f"run {r.id[:8]} ({r.status}) is not shown: {e} (stored by another rmax version)")
    several = len(got) > 1
    merged: dict[tuple, Table] = {}
    for host, r, s in got:
        view = fam.view(s)
        for i, t in enumerate(view.tables):
            key = (i, tuple(t.columns))
            if key not in merged:
                merged[key] = Table((["Host"] if several else []) + t.columns, [], t.caption)
            merged[key].rows += [([host] if several else []) + row for row in t.rows]
        sec.notes += [f"{host}: {n}" if several else n for n in view.notes]
        busy = load.busy_line(r.load, r.hostname)
        if busy:   # its figures may be another user's slowdown, not this node's
            sec.warnings.append(f"Measured on a busy node: {busy} (run {r.id[:8]})")   # the line names the host
        for name, rows in view.data.items():
            sec.data.setdefault(name, []).extend({"run": r.id, "host": host, **row} for row in rows)
    sec.tables += merged.values()
    sec.plots += [plots.render(p) for p in fam.plots([(host, s) for host, _, s in got])]
    if not got and not sec.notes:
        sec.notes.append(f"No {fam.name} run to show.")
    return [sec]
