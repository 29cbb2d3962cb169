"""memcopy: memcpy bandwidth vs buffer size (native/node/memcopy.c), seed 05's NIST memcopy.
A copy of B bytes touches 2B (source and destination): boundaries are reported in working-set bytes."""

from __future__ import annotations

from rmax.bench import cache_boundaries as cb
from rmax.bench.node_kernel import invalid, run_node
from rmax.bench.runner import Parsed
from rmax.native import executable
from rmax.store.runs import RunRecord

SCHEMA = "rmax.memcopy/1"
PLAN = {"default": (10.0, 4), "quick": (2.0, 2)}


def argv(budget: float, per_octave: int, min_size: int | None = None, max_size: int | None = None) -> list[str]:
    a = [executable("rmax-node"), "memcopy", "--json", "-", "--budget", str(budget), "--points-per-octave",
         str(per_octave)]
    for opt, v in (("--min-size", min_size), ("--max-size", max_size)):
        if v:
            a += [opt, str(v)]
    return a


def parse(records: list[dict]) -> Parsed:
    recs = [r for r in records if r.get("schema") == SCHEMA]
    sweep = next((r for r in records if r.get("schema") == "rmax.memcopy.sweep/1"), {})
    points = [{"bytes": r["bytes"], "median": r["summary"]["median"], "min": r["summary"]["min"],
               "max": r["summary"]["max"], "n": r["summary"]["n"]} for r in recs]
    ws = [2 * p["bytes"] for p in points]
    rates = [p["max"] for p in points]  # the least disturbed by other work on the node, as memlat's minimum
    summary = {"unit": "MB/s", "statistic": "median of timed blocks (points), maximum for steps; MB = 10^6 bytes copied",
               "points": points,
               "steps_working_set": cb.as_dicts(cb.boundaries(ws, rates)),
               "plateaus_working_set": cb.as_dicts(cb.plateaus(ws, rates)), "sysfs_caches": cb.sysfs_levels(),
               "sweep": {k: sweep.get(k) for k in ("sizes_measured", "sizes_planned", "max_size", "stopped_by",
                                                  "seconds")}}
    samples = {str(r["bytes"]): r["samples"] for r in recs}
    if not recs:
        return Parsed(summary, samples, "failed", "memcopy measured no buffer size")
    err = invalid(recs, lambda r: f"{r['bytes']} bytes")
    return Parsed(summary, samples, "invalid" if err else "ok", err)


def run(quick: bool = False, *, budget: float | None = None, min_size: int | None = None,
        max_size: int | None = None, points_per_octave: int | None = None, store=None, parent: str | None = None,
        label: str | None = None,
        spec=None, launcher: str | None = None, timeout: float | None = None, on_stdout=None) -> RunRecord:
    p_budget, p_ppo = PLAN["quick" if quick else "default"]
    budget, ppo = budget or p_budget, points_per_octave or p_ppo
    params = {"budget": budget, "min_size": min_size, "max_size": max_size, "points_per_octave": ppo, "quick": quick}
    return run_node("memcopy", argv(budget, ppo, min_size, max_size), params, parse, store=store, parent=parent,
                    label=label, spec=spec, launcher=launcher,
                    timeout=timeout or 3 * budget + 60, on_stdout=on_stdout)
