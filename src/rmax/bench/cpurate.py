"""cpurate: Brown's floating-point rate vs vector length (native/node/cpurate.c),
with the cache boundaries it reveals, from the rate and from its spread."""

from __future__ import annotations

from rmax.bench import cache_boundaries as cb
from rmax.bench.node_kernel import invalid, run_node
from rmax.bench.runner import Parsed
from rmax.native import executable
from rmax.store.runs import RunRecord

# Seconds for the whole sweep (both precisions), points per doubling, samples per length: about a fifth
# of the 3-minute node set; in the 30-s quick set, 4 s with coarser steps and fewer samples.
PLAN = {"default": (35.0, 4, 30), "quick": (4.0, 2, 10)}
SCHEMA = "rmax.cpurate/1"


def argv(budget: float, precision: str = "both", min_size: int | None = None, max_size: int | None = None,
         reps: int = 30, points_per_octave: int = 4, sample_time: float | None = None) -> list[str]:
    a = [executable("rmax-node"), "cpurate", "--json", "-", "--budget", str(budget), "--precision", precision,
         "--reps", str(reps), "--points-per-octave", str(points_per_octave)]
    if min_size:
        a += ["--min-size", str(min_size)]
    if max_size:
        a += ["--max-size", str(max_size)]
    if sample_time:
        a += ["--sample-time", str(sample_time)]
    return a


def key(r: dict) -> str:
    return f"{r['precision']}/{r['bytes']}"


def analyse(points: list[dict]) -> dict:
    """Boundaries from one precision's curve: steps of the median rate, peaks of the relative SD."""
    sizes = [p["bytes"] for p in points]
    rate = [p["median"] for p in points]
    spread = [p["sd"] / p["mean"] if p.get("mean") else None for p in points]
    steps = cb.boundaries(sizes, rate)
    return {"rate_steps": cb.as_dicts(steps),
            "plateaus": cb.as_dicts(cb.plateaus(sizes, rate)),
            "spread_peaks": cb.spread_peaks(sizes, [s if s is not None else float("nan") for s in spread])}


def parse(records: list[dict]) -> Parsed:
    recs = [r for r in records if r.get("schema") == SCHEMA]
    sweep = next((r for r in records if r.get("schema") == "rmax.cpurate.sweep/1"), {})
    curves: dict[str, list[dict]] = {}
    for r in recs:
        s = r["summary"]
        curves.setdefault(r["precision"], []).append(
            {"bytes": r["bytes"], "median": s["median"], "mean": s["mean"], "sd": s["sd"], "n": s["n"],
             "min": s["min"], "max": s["max"], "passes": r["passes"], "empty_loop_s": r["empty_loop_s"]})
    summary = {"unit": "GFLOPS", "statistic": "median, mean and sd of timed blocks per length",
               "curves": curves, "analysis": {p: analyse(pts) for p, pts in curves.items()},
               "sysfs_caches": cb.sysfs_levels(),
               "sweep": {k: sweep.get(k) for k in ("lengths_measured", "lengths_planned", "max_size", "llc_bytes",
                                                  "stopped_by", "seconds")}}
    samples = {key(r): r["samples"] for r in recs}
    if not recs:
        return Parsed(summary, samples, "failed", "cpurate measured no vector length")
    err = invalid(recs, key)
    return Parsed(summary, samples, "invalid" if err else "ok", err)


def run(quick: bool = False, *, budget: float | None = None, precision: str = "both", min_size: int | None = None,
        max_size: int | None = None, reps: int | None = None, points_per_octave: int | None = None, store=None,
        parent: str | None = None, label: str | None = None,
        spec=None, launcher: str | None = None, timeout: float | None = None,
        on_stdout=None) -> RunRecord:
    p_budget, p_ppo, p_reps = PLAN["quick" if quick else "default"]
    budget, ppo, reps = budget or p_budget, points_per_octave or p_ppo, reps or p_reps
    params = {"budget": budget, "precision": precision, "min_size": min_size, "max_size": max_size, "reps": reps,
              "points_per_octave": ppo, "quick": quick}
    # the sweep can overrun its budget by one length plus the allocation
    return run_node("cpurate", argv(budget, precision, min_size, max_size, reps, ppo), params, parse, store=store,
                    parent=parent, label=label, spec=spec, launcher=launcher,
                    timeout=timeout or 3 * budget + 60, on_stdout=on_stdout)
