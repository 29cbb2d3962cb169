"""`rmax runs export`'s rows: one a number of a run, each with the hosts it was measured on and
its unit, so that a pandas or jq user guesses neither.

A family's run gives its figures (Family.metrics: each in its quantity's one unit, rmax.units).
Any other run (a survey, one HPL test, an inventory) gives the numbers of its summary, each under
its full dotted name, its unit read from the summary (a "unit" beside it) or from its name by
UNIT_RULES, else 1: a pure number (a count, a code, N, NB, a residual)."""

from __future__ import annotations

import re

from rmax import units
from rmax.hostlist import compress

# key: the figure's stable name (runs pair by it); metric: its name for people; point: what it
# was measured at (a working set, a message size), when that can differ between runs.
COLUMNS = ("run_id", "family", "status", "started_at", "hosts", "key", "metric", "point", "statistic", "value",
           "unit")

# A summary field's unit from its dotted name (lower case), first match: suffixes as rmax names
# its fields (time_s, total_bytes, cpuinfo_hz), and HPL's phase times (phases.update: seconds).
UNIT_RULES = (
    (re.compile(r"(^|[._])(bytes|[a-z_]*_bytes)$"), units.SIZE),
    (re.compile(r"(_s|_seconds|^seconds|\.seconds)$|^phases(_[a-z]+)?\."), units.DURATION),
    (re.compile(r"_us$"), units.LATENCY),
    (re.compile(r"_ns$"), units.LOAD_LATENCY),
    (re.compile(r"_hz$"), "Hz"),
    (re.compile(r"_mhz$"), "MHz"),
    (re.compile(r"gflops$"), units.FLOP_RATE),
    (re.compile(r"(_mbs|_mbps)$"), units.BANDWIDTH),
    (re.compile(r"(_pct|percent)$"), units.PERCENT),
)


def field_unit(summary: dict, name: str) -> str:
    """The unit of the summary's number at dotted `name`."""
    node: object = summary
    for part in name.split(".")[:-1]:
        node = node.get(part, {}) if isinstance(node, dict) else {}
    if isinstance(node, dict) and isinstance(node.get("unit"), str) and node["unit"]:
        return node["unit"]
    low = name.lower()
    return next((unit for rule, unit in UNIT_RULES if rule.search(low)), units.NUMBER)


def _numbers(d: dict, prefix: str = ""):
    for k, v in d.items():
        name = f"{prefix}{k}"
        if isinstance(v, dict):
            yield from _numbers(v, name + ".")
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            yield name, v


def figure_rows(run) -> list[dict]:
    """The run's numbers as rows without the run's own columns: key, metric, point, statistic, value, unit."""
    from rmax.families import loaded

    got = loaded(run)
    if got is not None:
        fam, s = got
        return [{"key": f.key, "metric": f.metric, "point": f.at or "", "statistic": f.statistic, "value": f.value,
                 "unit": f.unit} for f in fam.metrics(s)]
    return [{"key": name, "metric": name, "point": "", "statistic": "", "value": v,
             "unit": field_unit(run.summary, name)} for name, v in _numbers(run.summary) if name != "schema"]


def csv_rows(run) -> list[list]:
    head = [run.id, run.kind, run.status, run.started_at, compress(run.ran_on)]
    return [head + [r[c] for c in COLUMNS[5:]] for r in figure_rows(run)]


def json_run(run) -> dict:
    """The run as stored, its hosts those it ran on (never empty where its host is known), and its
    numbers as `figures`, each with its unit."""
    d = run.as_dict()
    d["hosts"] = run.ran_on
    d["figures"] = figure_rows(run)
    return d
