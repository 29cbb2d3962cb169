"""NB candidates seeded from the DGEMM k-sweep (the I-Cluster rule, Richard et al.: HPL's
trailing update is an (m x NB) by (NB x n) product, so NB should be a k at which DGEMM
runs near its best), with HPL's tuning notes as the fallback."""

from __future__ import annotations

from rmax.tune.space import FALLBACK_NBS

NEAR_BEST = 0.90     # a k within 10% of the best k's rate is worth trying as NB
MIN_CANDIDATES = 3   # the sweep may have one clear winner; still try its neighbours
FULL_SWEEP = 4       # k points a sweep needs to say where the rate levels off


def from_k_sweep(points) -> list[int]:
    """NB candidates from the k-sweep's points (rmax.bench.dgemm.DgemmPoint), best-rated first."""
    pts = [p for p in points if 16 <= p.k <= 512 and p.median > 0]
    if not pts:
        return []
    ranked = sorted(pts, key=lambda p: -p.median)
    top = ranked[0].median
    chosen = [p.k for p in ranked if p.median >= NEAR_BEST * top]
    for p in ranked:
        if len(chosen) >= MIN_CANDIDATES:
            break
        if p.k not in chosen:
            chosen.append(p.k)
    return chosen


def nb_candidates(store) -> tuple[list[int], str, str | None]:
    """(candidates, where they came from, the id of the dgemm run they came from): the freshest full
    k-sweep (FULL_SWEEP points or more) of an ok `dgemm` run on this node, however many square-only
    runs came after it; else the fallback (and no run)."""
    if store is not None:
        from rmax.bench.family import loaded
        from rmax.model.provenance import Scope, cite

        scope = Scope.here()
        for run in store.list(kind="dgemm", status="ok"):
            got = loaded(run) if scope.on_a_node(run) else None
            if got is None or len(got[1].k) < FULL_SWEEP:
                continue
            nbs = from_k_sweep(got[1].k)
            if nbs:
                return nbs, (f"DGEMM k-sweep of {cite(run)} (k within {100 - NEAR_BEST * 100:.0f}% of the best "
                             "rate)"), run.id
    return list(FALLBACK_NBS), ("HPL's tuning notes (multiples of 32 in [64, 256]; no dgemm run with a k sweep "
                                "stored here: run `rmax bench dgemm --sweep k`)"), None
