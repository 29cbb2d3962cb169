"""peakflops: measured FMA-throughput peak (native/node/peakflops.c)."""

from __future__ import annotations

from rmax.bench.runner import Parsed
from rmax.native import executable


def argv(budget: float = 2.0, precision: str = "both", isa: str = "all", threads: int | None = None,
         sample_time: float | None = None) -> list[str]:
    a = [executable("rmax-node"), "peakflops", "--json", "-", "--budget", str(budget),
         "--precision", precision, "--isa", isa]
    if threads:
        a += ["--threads", str(threads)]
    if sample_time:
        a += ["--sample-time", str(sample_time)]
    return a


def key(rec: dict) -> str:
    return f"{rec['isa']}/{rec['precision']}/{rec['threads']}"


def parse(records: list[dict]) -> Parsed:
    recs = [r for r in records if r.get("schema") == "rmax.peakflops/1"]
    bad = [key(r) for r in recs if not r.get("validated")]
    summary = {key(r): {**r["summary"], "unit": "GFLOPS", "statistic": "median"} for r in recs if r.get("validated")}
    samples = {key(r): r["samples"] for r in recs if r.get("validated")}
    if bad:
        return Parsed(summary, samples, "invalid", f"validation failed for {', '.join(bad)}")
    return Parsed(summary, samples)


def rpeak_view(summary: dict) -> dict | None:
    """The stored medians read against the nominal Rpeak of `rmax info`: the FMA-unit count the
    AVX-512/AVX2 ratio implies, the nominal figure and its derivation, and any contradiction.
    None when the inventory cannot say (the measurement stands on its own)."""
    rows = []
    for k, s in summary.items():
        isa, precision, threads = k.split("/")
        rows.append({"isa": isa, "precision": precision, "threads": int(threads), "fused": isa != "sse2",
                     "median_gflops": s.get("median"), "n": s.get("n")})
    try:
        from rmax.inventory.cpu import collect_cpu
        from rmax.inventory.rpeak import derive

        r = derive(collect_cpu(), rows, None)
    except Exception:  # inventory unavailable or changed: the peak table is still right
        return None
    return {k: r.get(k) for k in ("fma_units", "fma_units_source", "fma_units_detail", "nominal_gflops", "formula",
                                  "warning")}


# (seconds per measurement, seconds per timed block): 12 measurements (3 ISAs x 2 precisions x 2 thread counts)
PLAN = {"default": (0.5, 0.02), "quick": (0.05, 0.005)}


def run(quick: bool = False, *, budget: float | None = None, precision: str = "both", isa: str = "all",
        threads: int | None = None, store=None, parent: str | None = None, label: str | None = None,
        spec=None, launcher: str | None = None, timeout: float = 600.0, on_stdout=None):
    """Measure and store one peakflops run: the entry point of `rmax bench peakflops` and of a
    survey (spec.hosts, when given, names the node to run on through `launcher`)."""
    from rmax.bench.node_kernel import run_node

    p_budget, sample_time = PLAN["quick" if quick else "default"]
    budget = budget or p_budget
    params = {"budget": budget, "precision": precision, "isa": isa, "threads": threads, "quick": quick}
    return run_node("peakflops", argv(budget, precision, isa, threads, sample_time), params, parse, store=store,
                    parent=parent, label=label, spec=spec, launcher=launcher, timeout=timeout, on_stdout=on_stdout)
