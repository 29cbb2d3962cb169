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




def _hpl_problem(rows: list[dict], by_id: dict) -> tuple[int, int, int, int] | None:
    """(N, NB, P, Q) of the HPL run behind the Rmax row: a plain HPL run's best test, or a tuning
    session's best configuration."""
    from rmax.families import loaded

    row = by_role(rows, "hpl_rmax")
    run = by_id.get(row["run"]) if row else None
    if run is None:
        return None
    if run.kind == "tune":
        b = run.summary.get("best") or {}
        return (b["n"], b["nb"], *b["grid"]) if b.get("grid") else None
    got = loaded(run)
    t = got[1].best() if got and run.kind == "hpl" else None
    return (t.n, t.nb, t.p, t.q) if t else None


def _dgemm_bound(rows: list[dict], runs: list[RunRecord]) -> dict | None:
    """What HPL could reach if it were all DGEMM: the one-thread DGEMM rate times the cores. The
    rate is the one at the shape of HPL's trailing update in the survey's own HPL run (N, NB, grid:
    rmax.families.dgemm.hpl_update_shape) where the dgemm runs measured it; else their best point,
    which then says it is not at HPL's shape (a small square DGEMM runs slower than HPL's)."""
    from rmax.families.dgemm import hpl_update_shape
    from rmax.families import loaded

    by_id = {r.id: r for r in runs}
    cores = sum((r.summary.get("cpu") or {}).get("cores") or 0 for r in runs if r.kind == "info" and r.status == "ok")
    dgemm = [(row, loaded(by_id[row["run"]])) for row in rows
             if row.get("role") == "dgemm_node" and row["run"] in by_id]
    # The DGEMM family's summary records its threads: a one-thread rate stands for one core.
    dgemm = [(row, got[1]) for row, got in dgemm if got and got[1].threads == 1]
    if not dgemm or not cores:
        return None
    hpl = _hpl_problem(rows, by_id)
    shape = hpl_update_shape(*hpl) if hpl else None
    at = [(row["run"], s.at_shape(*shape)) for row, s in dgemm] if shape else []
    if at and all(found for _, found in at):
        # the slowest node sets the pace
        run, (path, p) = min(at, key=lambda x: x[1][1].median)
        n, nb, pp, qq = hpl
        # HPL's N may be sized after the DGEMM step measured (from the network's latency): its
        # nearest shape of the same k then stands for it, said so
        where = (f"at HPL's shape m={p.m} n={p.n} k={p.k}" if (p.m, p.n, p.k) == shape else
                 f"at m={p.m} n={p.n} k={p.k}, the measured shape nearest HPL's m={shape[0]} n={shape[1]} k={shape[2]}")
        return {"metric": "DGEMM bound (all cores)", "value": p.median * cores, "unit": "GFLOPS",
                "role": "dgemm_bound", "run": run, "host": None, "path": [*path, "median"], "scale": cores,
                "at_hpl_shape": True,
                "statistic": (f"{p.median:.1f} GFLOPS per core (median, slowest node) {where} (its trailing update "
                              f"at N={n}, NB={nb}, {pp}x{qq}) x {cores} cores")}
    row = min((row for row, _ in dgemm), key=lambda r: r["value"])
    why = (f"no DGEMM measured at HPL's shape m={shape[0]} n={shape[1]} k={shape[2]}" if shape
           else "no HPL run to take the shape from")
    return {"metric": "DGEMM bound (all cores)", "value": row["value"] * cores, "unit": "GFLOPS",
            "role": "dgemm_bound", "run": row["run"], "host": None, "path": row["path"], "scale": cores,
            "at_hpl_shape": False,
            "statistic": f"{row['value']:.1f} GFLOPS per core (median, slowest node, best size: not at HPL's shape, "
                         f"{why}) x {cores} cores"}


def _family_rows(r: RunRecord) -> list[dict] | None:
    """A family run's headline figures as rows, or None when the run is no family's."""
    from rmax.families import family_of, loaded

    if family_of(r) is None:
        return None
    got = loaded(r)
    if got is None:
        return []   # stored by an older rmax in another shape: not misread
    fam, s = got
    return [{"metric": f.metric, "value": f.value, "unit": f.unit, "statistic": f.statistic, "role": f.role,
             "family": fam.name, "key": f.key, "path": list(f.path), "scale": f.scale}
            for f in fam.headline(s)]


def shown_metric(row: dict, rows: list[dict]) -> str:
    """A row's metric as shown: with its host when another host has a row of the same metric
    (a survey of several nodes has one peak per node)."""
    hosts = {r.get("host") for r in rows if r["metric"] == row["metric"]}
    return f"{row['metric']} on {row['host']}" if len(hosts) > 1 and row.get("host") else row["metric"]


def headline(runs: list[RunRecord]) -> list[dict]:
    rows = []
    for r in runs:
        if r.status != "ok":
            continue
        where = {"run": r.id, "host": r.hosts[0] if r.hosts else None}
        fam_rows = _family_rows(r)
        if fam_rows is not None:
            rows += [{**row, **where, **_not_a_basis(row, r)} for row in fam_rows]
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
    peak = cluster_peak(rows)
    return rows + ([bound] if bound else []) + ([peak] if peak and peak.get("role") == "cluster_peak" else [])


def _not_a_basis(row: dict, run: RunRecord) -> dict:
    """A peak basis measured on a busy node plays no role: % of peak would depend on the load of the
    moment (the inventory's Rpeak, derived without it, gives the basis or says there is none)."""
    from rmax.inventory.load import busy_line

    if row.get("role") != "peak_basis" or not (busy := busy_line(run.load)):
        return {}
    return {"role": None, "statistic": f"{row['statistic']}; measured on a busy node ({busy}): not the basis"}


def by_role(rows: list[dict], role: str) -> dict | None:
    """The first headline row playing `role` (view.ROLES), or None."""
    return next((r for r in rows if r.get("role") == role), None)


def cluster_peak(rows: list[dict]) -> dict | None:
    """The peak HPL's Rmax is set against: the one node's peak basis, or with several nodes (each
    measures its own) the sum over the nodes, as a row of its own ("cluster_peak")."""
    summed = by_role(rows, "cluster_peak")
    if summed:
        return summed
    per_node: dict = {}
    for r in rows:
        if r.get("role") == "peak_basis":
            per_node.setdefault(r.get("host"), r)
    if len(per_node) <= 1:
        return next(iter(per_node.values()), None)
    hosts = sorted(str(h) for h in per_node)
    return {"metric": "Peak used for % of peak (all nodes)", "value": sum(r["value"] for r in per_node.values()),
            "unit": "GFLOPS", "role": "cluster_peak", "run": None, "host": None,
            "statistic": f"sum of the {len(hosts)} nodes' peaks used for % of peak ({', '.join(hosts)})"}


def peak_beaten(rows: list[dict]) -> str | None:
    """A sentence when HPL's Rmax is above the peak it would be a % of: a peak a real kernel beats is
    no peak (a busy node, or threads that did not all run at once, measured it low)."""
    hpl, peak = by_role(rows, "hpl_rmax"), cluster_peak(rows)
    if not (hpl and peak and peak["value"]) or hpl["value"] <= peak["value"]:
        return None
    return (f"HPL's {hpl['value']:.1f} GFLOPS is above the peak used for % of peak ({peak['value']:.1f} GFLOPS, "
            f"{peak['statistic']}): a rate a real kernel beats is no peak, so no % of peak is given; measure the "
            "peak again on quiet nodes (rmax bench peakflops --budget 5).")


def percent_of_peak(rows: list[dict]) -> dict | None:
    """HPL Rmax as a fraction of the peak of the nodes it ran on (cluster_peak: the peakflops runs',
    else the inventories'); None when HPL beat that peak (peak_beaten says so)."""
    hpl, peak = by_role(rows, "hpl_rmax"), cluster_peak(rows)
    if hpl and peak and peak["value"] and not peak_beaten(rows):
        runs = [r for r in (hpl.get("run"), peak.get("run")) if r]
        return {"metric": "HPL % of peak", "value": 100 * hpl["value"] / peak["value"], "unit": "%",
                "statistic": f"{hpl['value']:.1f} / {peak['value']:.1f} GFLOPS ({peak['statistic']})"
                             + (f"; runs {', '.join(r[:8] for r in runs)}" if runs else ""),
                "runs": runs}
    return None
