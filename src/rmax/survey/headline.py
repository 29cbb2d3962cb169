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


@extractor("net")
def _net(r: RunRecord) -> list[Row]:
    h = r.summary.get("headline") or {}
    rows = []
    if h.get("latency_1B") is not None:
        rows.append(("MPI latency, 1 B", h["latency_1B"] * 1e6, "us", "median one-way"))
    if h.get("bandwidth_1MiB") is not None:
        rows.append(("MPI bandwidth, 1 MiB", h["bandwidth_1MiB"] / 1e6, "MB/s", "median"))
    return rows


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
    return rows


def percent_of_peak(rows: list[dict]) -> dict | None:
    """HPL Rmax as a fraction of the peak the inventory says to use."""
    hpl = next((r for r in rows if r["metric"].startswith("HPL Rmax")), None)
    peak = next((r for r in rows if r["metric"] == "Peak used for % of peak"), None)
    if hpl and peak and peak["value"]:
        return {"metric": "HPL % of peak", "value": 100 * hpl["value"] / peak["value"], "unit": "%",
                "statistic": f"{hpl['value']:.1f} / {peak['value']:.1f} GFLOPS ({peak['statistic']})"}
    return None
