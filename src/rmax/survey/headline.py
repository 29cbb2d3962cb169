"""The few numbers that characterise a cluster, drawn from a survey's runs.

One extractor per run kind, registered by kind; each returns rows of
(metric, value, unit, statistic) so every number says what it is."""

from __future__ import annotations

from typing import Callable

from rmax.store.runs import RunRecord

Row = tuple[str, float, str, str]
EXTRACTORS: dict[str, Callable[[RunRecord], list[Row]]] = {}


def extractor(kind: str):
    def deco(fn):
        EXTRACTORS[kind] = fn
        return fn
    return deco


@extractor("info")
def _info(r: RunRecord) -> list[Row]:
    rp = r.summary.get("rpeak") or {}
    rows = []
    nominal = (rp.get("nominal") or {}).get("gflops") if isinstance(rp.get("nominal"), dict) else rp.get("nominal_gflops")
    if nominal:
        rows.append(("Rpeak (nominal)", nominal, "GFLOPS", "cores x clock x flops/cycle"))
    if rp.get("gflops"):
        rows.append(("Peak used for % of peak", rp["gflops"], "GFLOPS", f"basis: {rp.get('basis')}"))
    return rows


@extractor("peakflops")
def _peak(r: RunRecord) -> list[Row]:
    best = max(((k, v) for k, v in r.summary.items() if "/double/" in k and isinstance(v, dict)),
               key=lambda kv: kv[1].get("median") or 0, default=None)
    return [("Measured FMA peak (" + best[0] + ")", best[1]["median"], "GFLOPS", "median of timed blocks")] if best else []


@extractor("hpl")
def _hpl(r: RunRecord) -> list[Row]:
    b = r.summary.get("best")
    if not b:
        return []
    return [(f"HPL Rmax (N={b['n']}, NB={b['nb']}, {b['p']}x{b['q']}, {r.params.get('engine')})", b["gflops"], "GFLOPS",
             "best test")]


@extractor("tune")
def _tune(r: RunRecord) -> list[Row]:
    b = r.summary.get("best")
    if not b:
        return []
    return [(f"HPL Rmax (tuned: N={b['n']}, NB={b['nb']}, {b['grid'][0]}x{b['grid'][1]}, {b['code']})", b["gflops"],
             "GFLOPS", b.get("statistic", "best trial"))]


@extractor("net")
def _net(r: RunRecord) -> list[Row]:
    h = r.summary.get("headline") or {}
    rows = []
    def over(key: str) -> str:
        if h.get(f"{key}_stable") is None:
            return ""
        return (f" of {h[f'{key}_repeats']} repeats, spread {h[f'{key}_spread'] * 100:.0f}%"
                + ("" if h[f"{key}_stable"] else " (unstable)"))
    if h.get("latency_1B") is not None:
        rows.append(("MPI latency, 1 B", h["latency_1B"] * 1e6, "us", "median one-way" + over("latency_1B")))
    if h.get("bandwidth_1MiB") is not None:
        rows.append(("MPI bandwidth, 1 MiB", h["bandwidth_1MiB"] / 1e6, "MB/s", "median" + over("bandwidth_1MiB")))
    return rows


@extractor("stream")
def _stream(r: RunRecord) -> list[Row]:
    res = r.summary.get("results") or {}
    triads = {int(k.split("/")[1]): v for k, v in res.items() if k.startswith("triad/")}
    if not triads:
        return []
    threads = max(triads)
    return [(f"STREAM Triad ({threads} threads)", triads[threads]["best"] / 1e3, "GB/s", "best of repetitions (STREAM)")]


@extractor("dgemm")
def _dgemm(r: RunRecord) -> list[Row]:
    pts = (r.summary.get("square") or []) + (r.summary.get("k") or [])
    if not pts:
        return []
    best = max(pts, key=lambda p: p["median"])
    threads = r.params.get("threads", 1)
    return [(f"DGEMM per process ({threads} thread{'s' if threads != 1 else ''}, m={best['m']} k={best['k']})",
             best["median"], "GFLOPS", "median of timed blocks, best size")]


def _dgemm_bound(rows: list[dict], runs: list[RunRecord]) -> dict | None:
    """What HPL could reach if it were all DGEMM: the one-thread DGEMM rate times the cores."""
    per = [r for r in rows if r["metric"].startswith("DGEMM per process (1 thread")]
    cores = sum((r.summary.get("cpu") or {}).get("cores") or 0 for r in runs if r.kind == "info" and r.status == "ok")
    if not per or not cores:
        return None
    rate = min(r["value"] for r in per)  # the slowest node sets the pace
    return {"metric": "DGEMM bound (all cores)", "value": rate * cores, "unit": "GFLOPS",
            "statistic": f"{rate:.1f} GFLOPS per core (median, slowest node) x {cores} cores", "run": per[0]["run"],
            "host": None}


def headline(runs: list[RunRecord]) -> list[dict]:
    rows = []
    for r in runs:
        fn = EXTRACTORS.get(r.kind)
        if fn and r.status == "ok":
            try:
                for metric, value, unit, stat in fn(r):
                    rows.append({"metric": metric, "value": value, "unit": unit, "statistic": stat,
                                 "run": r.id, "host": r.hosts[0] if r.hosts else None})
            except (KeyError, TypeError, ValueError):
                continue  # a run whose summary lacks a field simply contributes nothing
    bound = _dgemm_bound(rows, runs)
    return rows + ([bound] if bound else [])


def percent_of_peak(rows: list[dict]) -> dict | None:
    """HPL Rmax as a fraction of the peak the inventory says to use."""
    hpl = next((r for r in rows if r["metric"].startswith("HPL Rmax")), None)
    peak = next((r for r in rows if r["metric"] == "Peak used for % of peak"), None)
    if hpl and peak and peak["value"]:
        return {"metric": "HPL % of peak", "value": 100 * hpl["value"] / peak["value"], "unit": "%",
                "statistic": f"{hpl['value']:.1f} / {peak['value']:.1f} GFLOPS ({peak['statistic']})"}
    return None
