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
