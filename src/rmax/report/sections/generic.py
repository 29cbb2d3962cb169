"""Any run kind without a builder of its own: its summary's medians as a table."""

from __future__ import annotations

from rmax.report.section import Section, Table
from rmax.store.runs import RunRecord


def _medians(summary: dict, prefix: str = ""):
    """(metric, median, unit) for every summary entry that carries a median."""
    for key, val in summary.items():
        if isinstance(val, dict):
            if "median" in val and isinstance(val["median"], (int, float)):
                yield prefix + key, float(val["median"]), val.get("unit", "")
            else:
                yield from _medians(val, f"{prefix}{key}.")


def generic_section(kind: str, runs: list[RunRecord]) -> Section:
    rows, data = [], []
    for r in runs:
        for metric, median, unit in _medians(r.summary):
            host = r.hosts[0] if r.hosts else ""
            rows.append([host, metric, f"{median:.4g}", unit])
            data.append({"run": r.id, "host": host, "metric": metric, "median": median, "unit": unit})
    sec = Section(key=kind, title=f"{kind}", order=80, data={kind: data} if data else {})
    if rows:
        sec.tables.append(Table(["Host", "Metric", "Median", "Unit"], rows))
    else:
        sec.notes.append(f"{len(runs)} run(s) of kind {kind}; see `rmax runs show` for their details.")
    return sec
