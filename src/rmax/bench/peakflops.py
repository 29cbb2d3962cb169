"""peakflops: measured FMA-throughput peak (native/node/peakflops.c)."""

from __future__ import annotations

from rmax.bench.runner import Parsed
from rmax.native import executable


def argv(budget: float = 2.0, precision: str = "both", isa: str = "all", threads: int | None = None) -> list[str]:
    a = [executable("rmax-node"), "peakflops", "--json", "-", "--budget", str(budget),
         "--precision", precision, "--isa", isa]
    if threads:
        a += ["--threads", str(threads)]
    return a


def key(rec: dict) -> str:
    return f"{rec['isa']}/{rec['precision']}/{rec['threads']}"


def parse(records: list[dict]) -> Parsed:
    recs = [r for r in records if r.get("schema") == "rmax.peakflops/1"]
    bad = [key(r) for r in recs if not r.get("validated")]
    summary = {key(r): {**r["summary"], "unit": "GFLOPS", "statistic": "median"} for r in recs}
    samples = {key(r): r["samples"] for r in recs}
    if bad:
        return Parsed(summary, samples, "invalid", f"validation failed for {', '.join(bad)}")
    return Parsed(summary, samples)


def run(*, quick: bool = False, store=None, parent: str | None = None, spec=None, launcher: str | None = None,
        timeout: float = 600.0, budget: float | None = None, on_stdout=None):
    """Measure and store one peakflops run (the entry point of `rmax bench peakflops` and of a survey)."""
    from rmax.bench.runner import run_kernel
    from rmax.launch import LaunchSpec

    budget = budget if budget is not None else (0.2 if quick else 1.0)
    program = argv(budget, "both" if not quick else "double")
    spec = LaunchSpec(program=program, np=1, hosts=spec.hosts if spec else None)
    return run_kernel("peakflops", spec, params={"budget": budget, "quick": quick}, parse=parse,
                      launcher=launcher or ("local" if spec.hosts is None else None), timeout=timeout,
                      store=store, parent=parent, on_stdout=on_stdout)
