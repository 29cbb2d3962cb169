"""Measured FMA peak per ISA."""

from __future__ import annotations

from rmax.report import plots
from rmax.report.section import Section, Table, builder
from rmax.store.runs import RunRecord


@builder("peakflops")
def peakflops(runs: list[RunRecord]) -> list[Section]:
    sec = Section(key="peakflops", title="Measured floating-point peak", order=20)
    rows, data = [], []
    for r in runs:
        host = r.hosts[0] if r.hosts else ""
        for key, s in r.summary.items():
            isa, prec, threads = key.split("/")
            rows.append([host, isa, prec, threads, f"{s['median']:.1f}", f"{s['min']:.1f}", f"{s['max']:.1f}", str(s["n"])])
            data.append({"host": host, "isa": isa, "precision": prec, "threads": int(threads), **{k: s[k] for k in ("median", "min", "max", "n")}})
    sec.tables.append(Table(["Host", "ISA", "Precision", "Threads", "Median (GFLOPS)", "Min", "Max", "n"], rows,
                            "FMA-throughput kernels; each sample is one timed block"))
    dp = [d for d in data if d["precision"] == "double"]
    if dp:
        sec.plots.append(plots.bar_plot([f"{d['host']} {d['isa']} x{d['threads']}" for d in dp],
                                        [d["median"] for d in dp], "GFLOPS (median)", "Double-precision FMA peak"))
    sec.data["peakflops"] = data
    return [sec]
