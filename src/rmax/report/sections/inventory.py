"""The nodes: CPU, memory, caches, BLAS, MPI, Rpeak and its derivation."""

from __future__ import annotations

from rmax.report.section import Section, Table, builder
from rmax.store.runs import RunRecord


def _get(d: dict, *path, default="—"):
    for p in path:
        if not isinstance(d, dict) or d.get(p) is None:
            return default
        d = d[p]
    return d


def _gf(value) -> str:
    return f"{value:.1f}" if isinstance(value, (int, float)) else "—"


@builder("info")
def inventory(runs: list[RunRecord]) -> list[Section]:
    sec = Section(key="inventory", title="Nodes", order=10)
    rows, data = [], []
    for r in runs:
        s = r.summary
        rp = s.get("rpeak") or {}
        # An inventory that left the FMA peak to the survey's peakflops step has its Rpeak derived from
        # that run (rpeak.measured_in) once it ran; without it, no basis of its own.
        own_basis = s.get("measured") is not False or bool(rp.get("measured_in"))
        row = {
            "host": r.hosts[0] if r.hosts else _get(s, "hostname"),
            "cpu": _get(s, "cpu", "model"),
            "cores": _get(s, "cpu", "cores"),
            "memory_gib": round(_get(s, "memory", "total_bytes", default=0) / 2**30, 1),
            "blas": _get(s, "blas", "loaded", "name"),
            "mpi": f"{_get(s, 'mpi', 'default', 'implementation')} {_get(s, 'mpi', 'default', 'version')}",
            "rpeak_nominal_gflops": rp.get("nominal_gflops"),
            "peak_basis_gflops": rp.get("gflops") if own_basis else None,
            "basis": (rp.get("basis") if own_basis else "the peakflops step's")
            + (f" (peakflops run {rp['measured_in'][:8]})" if rp.get("measured_in") else ""),
        }
        data.append(row)
        rows.append([str(row["host"]), str(row["cpu"]), str(row["cores"]), f"{row['memory_gib']}",
                     str(row["blas"]), str(row["mpi"]), _gf(row["rpeak_nominal_gflops"]), _gf(row["peak_basis_gflops"]),
                     str(row["basis"])])
        if rp.get("formula"):
            sec.notes.append(f"{row['host']}: Rpeak = {rp['formula']}")
        if rp.get("warning") and own_basis:
            sec.notes.append(f"{row['host']}: {rp['warning']}")
        if rp.get("basis_reason") and own_basis:
            sec.notes.append(f"{row['host']}: % of peak basis: {rp['basis_reason']}")
        for w in _get(s, "blas", "loaded", "warnings", default=[]) or []:
            sec.notes.append(f"{row['host']}: BLAS: {w}")
    sec.tables.append(Table(["Host", "CPU", "Cores", "Memory (GiB)", "BLAS", "MPI", "Rpeak nominal (GFLOPS)",
                             "Peak for % (GFLOPS)", "Basis"], rows))
    sec.data["nodes"] = data
    return [sec]
