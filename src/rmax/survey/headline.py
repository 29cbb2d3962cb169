"""The few numbers that characterise a cluster, drawn from a survey's runs.

A benchmark family's figures come from the family itself (Family.headline:
each names the summary field it is read from); the inventory's Rpeak and the
runs not yet in a family have an extractor here. Every row says its metric,
value, unit and statistic, the run it came from, and its role (view.ROLES),
which is how the derived rows find their inputs."""

from __future__ import annotations

from typing import Callable

from rmax.store.runs import RunRecord

Row = tuple  # (metric, value, unit, statistic[, role])
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
        rows.append(("Rpeak (nominal)", nominal, "GFLOPS", "cores x clock x flops/cycle", "rpeak_nominal"))
    if rp.get("gflops"):
        rows.append(("Peak used for % of peak", rp["gflops"], "GFLOPS", f"basis: {rp.get('basis')}", "peak_basis"))
    return rows


@extractor("tune")
def _tune(r: RunRecord) -> list[Row]:
    b = r.summary.get("best")
    if not b:
        return []
    return [(f"HPL Rmax (tuned: N={b['n']}, NB={b['nb']}, {b['grid'][0]}x{b['grid'][1]}, {b['code']})", b["gflops"],
             "GFLOPS", b.get("statistic", "best trial"), "hpl_rmax")]




def _dgemm_bound(rows: list[dict], runs: list[RunRecord]) -> dict | None:
    """What HPL could reach if it were all DGEMM: the one-thread DGEMM rate times the cores."""
    from rmax.bench.family import loaded

    by_id = {r.id: r for r in runs}

    def threads(row: dict) -> int | None:
        got = loaded(by_id[row["run"]]) if row["run"] in by_id else None
        return got[1].threads if got else None     # the DGEMM family's summary records its threads

    per = [r for r in rows if r.get("role") == "dgemm_node" and threads(r) == 1]
    cores = sum((r.summary.get("cpu") or {}).get("cores") or 0 for r in runs if r.kind == "info" and r.status == "ok")
    if not per or not cores:
        return None
    rate = min(r["value"] for r in per)  # the slowest node sets the pace
    return {"metric": "DGEMM bound (all cores)", "value": rate * cores, "unit": "GFLOPS", "role": "dgemm_bound",
            "statistic": f"{rate:.1f} GFLOPS per core (median, slowest node) x {cores} cores", "run": per[0]["run"],
            "host": None}


def _family_rows(r: RunRecord) -> list[dict] | None:
    """A family run's headline figures as rows, or None when the run is no family's."""
    from rmax.bench.family import family_of, loaded

    if family_of(r) is None:
        return None
    got = loaded(r)
    if got is None:
        return []   # stored by an older rmax in another shape: not misread
    fam, s = got
    return [{"metric": f.metric, "value": f.value, "unit": f.unit, "statistic": f.statistic, "role": f.role,
             "family": fam.name, "key": f.key, "path": list(f.path), "scale": f.scale}
            for f in fam.headline(s)]


def headline(runs: list[RunRecord]) -> list[dict]:
    rows = []
    for r in runs:
        if r.status != "ok":
            continue
        where = {"run": r.id, "host": r.hosts[0] if r.hosts else None}
        fam_rows = _family_rows(r)
        if fam_rows is not None:
            rows += [{**row, **where} for row in fam_rows]
            continue
        fn = EXTRACTORS.get(r.kind)
        if fn:
            try:
                for metric, value, unit, stat, *rest in fn(r):
                    rows.append({"metric": metric, "value": value, "unit": unit, "statistic": stat,
                                 "role": rest[0] if rest else None, **where})
            except (KeyError, TypeError, ValueError):
                continue  # a run whose summary lacks a field simply contributes nothing
    # a role a family's figure plays is not repeated from an extractor: the peak basis of a survey
    # that ran peakflops is that run's (the inventory then did not measure the peak)
    played = {row["role"] for row in rows if row.get("family") and row.get("role")}
    rows = [row for row in rows if row.get("family") or row.get("role") not in played]
    bound = _dgemm_bound(rows, runs)
    return rows + ([bound] if bound else [])


def by_role(rows: list[dict], role: str) -> dict | None:
    """The first headline row playing `role` (view.ROLES), or None."""
    return next((r for r in rows if r.get("role") == role), None)


def percent_of_peak(rows: list[dict]) -> dict | None:
    """HPL Rmax as a fraction of the peak basis (the peakflops run's, else the inventory's)."""
    hpl = by_role(rows, "hpl_rmax")
    peak = by_role(rows, "peak_basis")
    if hpl and peak and peak["value"]:
        return {"metric": "HPL % of peak", "value": 100 * hpl["value"] / peak["value"], "unit": "%",
                "statistic": f"{hpl['value']:.1f} / {peak['value']:.1f} GFLOPS ({peak['statistic']})"}
    return None
