"""memlat: pointer-chasing load latency vs working-set size (native/node/memlat.c),
with the L1 / L2 / L3 / memory plateaus found in the random-chain curve."""

from __future__ import annotations

from rmax.bench import cache_boundaries as cb
from rmax.bench.node_kernel import invalid, run_node
from rmax.bench.runner import Parsed
from rmax.native import executable
from rmax.store.runs import RunRecord

SCHEMA = "rmax.memlat/1"
# (seconds for the sweep, sizes per doubling)
PLAN = {"default": (20.0, 4), "quick": (3.0, 2)}


def argv(budget: float, per_octave: int, pattern: str = "both", min_size: int | None = None,
         max_size: int | None = None, stride: int | None = None) -> list[str]:
    a = [executable("rmax-node"), "memlat", "--json", "-", "--budget", str(budget), "--points-per-octave",
         str(per_octave), "--pattern", pattern]
    for opt, v in (("--min-size", min_size), ("--max-size", max_size), ("--stride", stride)):
        if v:
            a += [opt, str(v)]
    return a


def key(r: dict) -> str:
    return f"{r['pattern']}/{r['bytes']}"


LEVEL_STEP = 1.5  # a new level of the hierarchy is at least this much slower than the one before


def name_plateaus(plateaus: list[dict], caches: dict[str, int], max_bytes: int | None) -> list[dict]:
    """Name plateaus after the hierarchy: consecutive plateaus within LEVEL_STEP of each other
    are one level (a level's sub-steps, e.g. TLB reach inside L2); levels take the reported
    cache names in order (L1d, L2, L3); the last level is 'memory' when there are more levels
    than caches, or when the sweep went past the largest reported cache."""
    groups: list[list[dict]] = []
    for p in plateaus:
        if groups and p["level"] < LEVEL_STEP * groups[-1][0]["level"]:
            groups[-1].append(p)
        else:
            groups.append([p])
    names = [n for n in caches if n.startswith("L")]
    beyond = bool(caches) and max_bytes is not None and max_bytes > max(caches.values())
    level_names = []
    for i in range(len(groups)):
        last = i == len(groups) - 1
        level_names.append("memory" if i >= len(names) or (last and i > 0 and beyond) else names[i])
    # several levels beyond the caches (a transition seen as its own plateau) are one memory level
    if level_names.count("memory") > 1:
        first = level_names.index("memory")
        groups = groups[:first] + [[p for g in groups[first:] for p in g]]
        level_names = level_names[:first] + ["memory"]
    out = []
    for name, g in zip(level_names, groups):
        for j, p in enumerate(g):
            out.append({**p, "name": name if len(g) == 1 else f"{name} ({j + 1} of {len(g)})"})
    return out


def analyse(points: list[dict], caches: dict[str, int], max_bytes: int | None) -> dict:
    """Plateaus and steps of the per-size minimum latency: on a shared node other work (an SMT
    sibling sharing L1, a preempting process) only ever adds time, so the minimum is the
    curve least disturbed by it, and the one whose steps are the hardware's."""
    sizes = [p["bytes"] for p in points]
    lat = [p["min"] for p in points]
    levels = cb.as_dicts(cb.plateaus(sizes, lat, rising=True))
    return {"steps": cb.as_dicts(cb.boundaries(sizes, lat, rising=True)),
            "plateaus": name_plateaus(levels, caches, max_bytes)}


def parse(records: list[dict]) -> Parsed:
    recs = [r for r in records if r.get("schema") == SCHEMA]
    sweep = next((r for r in records if r.get("schema") == "rmax.memlat.sweep/1"), {})
    curves: dict[str, list[dict]] = {}
    for r in recs:
        s = r["summary"]
        curves.setdefault(r["pattern"], []).append({"bytes": r["bytes"], "median": s["median"], "min": s["min"],
                                                    "max": s["max"], "n": s["n"], "stride": r["stride"]})
    caches = cb.sysfs_levels()
    last = max((p["bytes"] for c in curves.values() for p in c), default=None)
    summary = {"unit": "ns", "statistic": "median of timed chases (curves); minimum for plateaus and steps",
               "curves": curves, "sysfs_caches": caches,
               "analysis": {p: analyse(c, caches, last) for p, c in curves.items()},
               "sweep": {k: sweep.get(k) for k in ("sizes_measured", "sizes_planned", "max_size", "stopped_by",
                                                  "huge_pages", "seconds")}}
    samples = {key(r): r["samples"] for r in recs}
    if not recs:
        return Parsed(summary, samples, "failed", "memlat measured no working set")
    err = invalid(recs, key)
    return Parsed(summary, samples, "invalid" if err else "ok", err)


def run(quick: bool = False, *, budget: float | None = None, pattern: str = "both", min_size: int | None = None,
        max_size: int | None = None, stride: int | None = None, points_per_octave: int | None = None, store=None,
        parent: str | None = None, label: str | None = None,
        spec=None, launcher: str | None = None, timeout: float | None = None,
        on_stdout=None) -> RunRecord:
    p_budget, p_ppo = PLAN["quick" if quick else "default"]
    budget, ppo = budget or p_budget, points_per_octave or p_ppo
    params = {"budget": budget, "pattern": pattern, "min_size": min_size, "max_size": max_size, "stride": stride,
              "points_per_octave": ppo, "quick": quick}
    return run_node("memlat", argv(budget, ppo, pattern, min_size, max_size, stride), params, parse, store=store,
                    parent=parent, label=label, spec=spec, launcher=launcher,
                    timeout=timeout or 3 * budget + 60, on_stdout=on_stdout)
