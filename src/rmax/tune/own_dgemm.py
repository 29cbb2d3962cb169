"""The DGEMM measurements a session makes for itself, before its first trial, when the store has
none it can use: a full k sweep on this node (it seeds NB, rmax.tune.nb_seed) and the shape of
HPL's trailing update at the session's N, NB and grid (it gives the DGEMM bound,
rmax.model.inputs), again at the end for the best's NB and grid when they differ. Both run the dgemm family at its quick budget, at the ranks' BLAS threads,
and are stored as children of the session."""

from __future__ import annotations

import dataclasses

from rmax.errors import RmaxError


def _run(store, threads: int, what: str, parent: str | None = None, **changes) -> tuple[str | None, str]:
    """(the dgemm run's id when it succeeded, what happened)."""
    from rmax.bench.family import RunContext
    from rmax.families import get, run

    dgemm = get("dgemm")
    o = dataclasses.replace(dgemm.options(quick=True), threads=threads, **changes)
    try:
        rec = run(dgemm, o, RunContext(store=store, parent=parent, label=f"tune: DGEMM {what}", quick=True))
    except RmaxError as e:
        return None, f"the DGEMM {what} could not run: {e}"
    if rec.status != "ok":
        return None, f"the DGEMM {what} (run {rec.id[:8]}) ended {rec.status}: {rec.error or ''}".rstrip(": ")
    return rec.id, f"ran the DGEMM {what} ({threads} thread(s)): dgemm {rec.id[:8]}"


def k_sweep(store, threads: int) -> tuple[str | None, str]:
    """A full k sweep (the family's default k list at its quick m = n)."""
    from rmax.families import get

    return _run(store, threads, "k sweep for NB", sweep="k", k=get("dgemm").options().k)


def hpl_shape(store, threads: int, shape: tuple[int, int, int], parent: str | None = None) -> tuple[str | None, str]:
    """HPL's trailing-update shape m x n x k (rmax.families.dgemm.hpl_update_shape)."""
    m, n, k = shape
    return _run(store, threads, f"at HPL's shape m={m} n={n} k={k}", parent, sweep="shape", shapes=(shape,))
