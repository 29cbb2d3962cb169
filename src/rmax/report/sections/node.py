"""DGEMM vs size and vs k."""

from __future__ import annotations

from rmax.report import plots
from rmax.report.section import Section, builder
from rmax.store.runs import RunRecord


def _host(r: RunRecord) -> str:
    return r.hosts[0] if r.hosts else ""


@builder("dgemm")
def dgemm(runs: list[RunRecord]) -> list[Section]:
    sec = Section(key="dgemm", title="DGEMM", order=28)
    data = []
    for r in runs:
        host, s = _host(r), r.summary
        blas = (r.environment.get("blas") or {}).get("name") or r.params.get("blas") or ""
        sq, ks = s.get("square", []), s.get("k", [])
        if sq:
            sec.plots.append(plots.line_plot({f"{host} {blas}": ([p["m"] for p in sq], [p["median"] for p in sq])},
                                             "m = n = k", "GFLOPS (median)", logx=True, title="DGEMM vs size"))
        if ks:
            sec.plots.append(plots.line_plot({f"{host} m=n={ks[0]['m']}": ([p["k"] for p in ks], [p["median"] for p in ks])},
                                             "inner dimension k", "GFLOPS (median)", logx=True,
                                             title="DGEMM vs k (seed 02's rule for NB)"))
        if s.get("nb_suggested"):
            sec.notes.append(f"{host}: NB suggested by the k sweep: {s['nb_suggested']} (the k with the best median rate)")
        data += [{"host": host, "sweep": "square", **p} for p in sq] + [{"host": host, "sweep": "k", **p} for p in ks]
    sec.data["dgemm"] = [{k: v for k, v in d.items() if k != "ci95"} for d in data]
    return [sec]
