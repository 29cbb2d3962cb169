"""stream: STREAM Copy, Scale, Add, Triad under STREAM's rules (native/node/stream.c)."""

from __future__ import annotations

from rmax.bench.node_kernel import check_fits, invalid, run_node
from rmax.bench.runner import Parsed
from rmax.native import executable
from rmax.store.runs import RunRecord

SCHEMA = "rmax.stream/1"
# Quick: 128 MiB arrays (below STREAM's 4x-cache rule on a node reporting a huge L3, and said so in
# the result); default: the rule's size, capped by memory. Budget: seconds past the first 10 repetitions.
PLAN = {"default": (None, 1.0), "quick": (128 * 2**20, 0.3)}


def argv(size: int | None, budget: float, mode: str = "both", threads: int | None = None,
         ntimes: int = 10) -> list[str]:
    a = [executable("rmax-node"), "stream", "--json", "-", "--mode", mode, "--budget", str(budget),
         "--ntimes", str(ntimes)]
    if size:
        a += ["--size", str(size)]
    if threads:
        a += ["--threads", str(threads)]
    return a


def key(r: dict) -> str:
    return f"{r['kernel']}/{r['threads']}"


def parse(records: list[dict]) -> Parsed:
    recs = [r for r in records if r.get("schema") == SCHEMA]
    summary: dict = {"unit": "MB/s", "statistic": "best (STREAM's rule), first repetition excluded", "results": {}}
    for r in recs:
        summary["results"][key(r)] = {**r["summary"], "best": r["best_mbs"], "kernel": r["kernel"],
                                      "threads": r["threads"], "repetitions": r["repetitions"],
                                      # each thread timed by itself, best per thread (hpcc StarSTREAM's way)
                                      "thread_best": r.get("thread_best_mbs"),
                                      "thread_best_mean": r.get("thread_best_mean_mbs")}
    if recs:
        r0 = recs[0]
        summary.update({"array_bytes": r0["array_bytes"], "array_elements": r0["array_elements"],
                        "total_cache_bytes": r0["total_cache_bytes"], "rule_met": r0["rule_met"]})
    samples = {key(r): r["samples"] for r in recs}
    err = invalid(recs, key)
    return Parsed(summary, samples, "invalid" if err else "ok", err)


def run(quick: bool = False, *, size: int | None = None, budget: float | None = None, mode: str = "both",
        threads: int | None = None, ntimes: int = 10, store=None, parent: str | None = None,
        label: str | None = None,
        spec=None, launcher: str | None = None, timeout: float = 600.0, on_stdout=None) -> RunRecord:
    p_size, p_budget = PLAN["quick" if quick else "default"]
    size = size or p_size
    budget = p_budget if budget is None else budget
    if size:
        check_fits("--size: three arrays", size, 3)
    params = {"size": size, "budget": budget, "mode": mode, "threads": threads, "ntimes": ntimes, "quick": quick}
    return run_node("stream", argv(size, budget, mode, threads, ntimes), params, parse, store=store, parent=parent,
                    label=label, spec=spec, launcher=launcher,
                    timeout=timeout, on_stdout=on_stdout)
