"""Node microbenchmarks: CPU rate vs vector length (seed 03's figures 5 and 6),
memory latency staircase, DGEMM vs size and k, memcpy, OS latencies."""

from __future__ import annotations

from rmax.report import plots
from rmax.report.section import Section, Table, builder
from rmax.store.runs import RunRecord


def _host(r: RunRecord) -> str:
    return r.hosts[0] if r.hosts else ""


def _cache_lines(r: RunRecord) -> dict[str, float]:
    return {f"{k} (sysfs)": v for k, v in (r.summary.get("sysfs_caches") or {}).items() if v}


@builder("cpurate")
def cpurate(runs: list[RunRecord]) -> list[Section]:
    sec = Section(key="cpurate", title="CPU rate vs vector length", order=25)
    data, rows = [], []
    for r in runs:
        host = _host(r)
        curves = r.summary.get("curves", {})
        rate = {f"{host} {prec}": ([p["bytes"] for p in pts], [p["median"] for p in pts]) for prec, pts in curves.items()}
        spread = {f"{host} {prec}": ([p["bytes"] for p in pts], [p["sd"] for p in pts]) for prec, pts in curves.items()}
        sec.plots.append(plots.line_plot(rate, "vector length (bytes)", "GFLOPS (median)", logx=True,
                                         vlines=_cache_lines(r), title="Rate vs vector length"))
        sec.plots.append(plots.line_plot(spread, "vector length (bytes)", "GFLOPS (sd over repetitions)", logx=True,
                                         vlines=_cache_lines(r), title="Run-to-run spread: its peaks mark the boundaries"))
        for prec, pts in curves.items():
            data += [{"host": host, "precision": prec, **p} for p in pts]
        for prec, a in (r.summary.get("analysis") or {}).items():
            for step in a.get("rate_steps", []):
                rows.append([host, prec, "rate step", f"{step['bytes'] / 1024:.0f}", f"{step['before']:.2f} -> {step['after']:.2f}"])
            for peak in a.get("spread_peaks", []):  # sizes in bytes where the run-to-run spread peaks
                rows.append([host, prec, "spread peak", f"{peak / 1024:.0f}", ""])
        for name, size in _cache_lines(r).items():
            rows.append([host, "", name, f"{size / 1024:.0f}", ""])
    sec.tables.append(Table(["Host", "Precision", "Boundary", "Size (KiB)", "GFLOPS / sd"], rows,
                            "cache boundaries detected from the rate curve and from the spread, beside the sizes sysfs reports"))
    sec.data["cpurate"] = data
    return [sec]


@builder("memlat")
def memlat(runs: list[RunRecord]) -> list[Section]:
    sec = Section(key="memlat", title="Memory latency", order=26)
    data, rows = [], []
    for r in runs:
        host = _host(r)
        curves = r.summary.get("curves", {})
        sec.plots.append(plots.line_plot(
            {f"{host} {pat}": ([p["bytes"] for p in pts], [p["median"] for p in pts]) for pat, pts in curves.items()},
            "working set (bytes)", "ns per load (median)", logx=True, logy=True, vlines=_cache_lines(r),
            title="Pointer-chasing latency"))
        for pat, pts in curves.items():
            data += [{"host": host, "pattern": pat, **p} for p in pts]
        for pat, a in (r.summary.get("analysis") or {}).items():
            for pl in a.get("plateaus", []):
                rows.append([host, pat, pl.get("name", ""), f"{pl['first_bytes'] / 1024:.0f}-{pl['last_bytes'] / 1024:.0f}",
                             f"{pl['level']:.2f}"])
    sec.tables.append(Table(["Host", "Chain", "Level", "Working set (KiB)", "Latency (ns)"], rows, "plateaus of the staircase"))
    sec.data["memlat"] = data
    return [sec]


@builder("memcopy")
def memcopy(runs: list[RunRecord]) -> list[Section]:
    sec = Section(key="memcopy", title="memcpy bandwidth", order=29)
    data = []
    for r in runs:
        pts = r.summary.get("points", [])
        sec.plots.append(plots.line_plot({_host(r): ([p["bytes"] for p in pts], [p["median"] / 1e3 for p in pts])},
                                         "buffer size (bytes)", "GB/s (median)", logx=True, vlines=_cache_lines(r),
                                         title="memcpy bandwidth vs buffer size"))
        data += [{"host": _host(r), **p} for p in pts]
    sec.data["memcopy"] = data
    return [sec]


@builder("oslat")
def oslat(runs: list[RunRecord]) -> list[Section]:
    sec = Section(key="oslat", title="Operating-system latencies (lmbench style)", order=30)
    rows, data = [], []
    for r in runs:
        for name, v in (r.summary.get("results") or {}).items():
            rows.append([_host(r), name, f"{v['median']:.3g}", v.get("unit", ""), f"{v['min']:.3g}", str(v["n"])])
            data.append({"host": _host(r), "test": name, "median": v["median"], "min": v["min"], "unit": v.get("unit"),
                         "n": v["n"]})
    sec.tables.append(Table(["Host", "Test", "Median", "Unit", "Min", "n"], rows,
                            "us per operation (smaller is better); bandwidth in MB/s (10^6 bytes)"))
    sec.data["oslat"] = data
    return [sec]
