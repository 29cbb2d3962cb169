"""oslat: lmbench-style operating-system latencies (native/node/oslat*.c)."""

from __future__ import annotations

from rmax.bench.node_kernel import invalid, run_node
from rmax.bench.runner import Parsed
from rmax.errors import RmaxError
from rmax.native import executable
from rmax.store.runs import RunRecord

SCHEMA = "rmax.oslat/1"
TESTS = ("null", "stat", "open-close", "sig-install", "sig-catch", "fork-exit", "fork-exec", "pipe", "unix", "ctxsw",
         "udp", "tcp", "tcp-connect", "tcp-bw")
BUDGET = {"default": 25.0, "quick": 3.0}


def argv(budget: float, tests: list[str] | None = None) -> list[str]:
    a = [executable("rmax-node"), "oslat", "--json", "-", "--budget", str(budget)]
    if tests:
        a += ["--tests", ",".join(tests)]
    return a


def parse(records: list[dict]) -> Parsed:
    recs = [r for r in records if r.get("schema") == SCHEMA]
    results = {}
    for r in recs:
        results[r["label"]] = {**r["summary"], "test": r["test"], "unit": r["unit"],
                               **({"procs": r["procs"], "ws_bytes": r["ws_bytes"]} if r["test"] == "ctxsw" else {}),
                               **({"overhead_us": r["overhead_us"]} if "overhead_us" in r else {})}
    summary = {"statistic": "median of timed batches; us per operation, MB/s (10^6 bytes/s) for bandwidth",
               "results": results}
    samples = {r["label"]: r["samples"] for r in recs}
    err = invalid(recs, lambda r: r["label"])
    return Parsed(summary, samples, "invalid" if err else "ok", err)


def check_tests(tests: list[str] | None) -> None:
    for t in tests or []:
        if t not in TESTS:
            raise RmaxError(f"unknown oslat test '{t}'", hint=f"one of {', '.join(TESTS)}")


def run(quick: bool = False, *, budget: float | None = None, tests: list[str] | None = None, store=None,
        parent: str | None = None, label: str | None = None,
        spec=None, launcher: str | None = None, timeout: float | None = None,
        on_stdout=None) -> RunRecord:
    check_tests(tests)
    budget = budget or BUDGET["quick" if quick else "default"]
    params = {"budget": budget, "tests": tests or list(TESTS), "quick": quick, "network": "127.0.0.1 only"}
    return run_node("oslat", argv(budget, tests), params, parse, store=store, parent=parent, label=label,
                    spec=spec, launcher=launcher,
                    timeout=timeout or 3 * budget + 60, on_stdout=on_stdout)
