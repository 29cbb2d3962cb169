"""NB candidates seeded from the DGEMM k-sweep (the I-Cluster rule, Richard et al.: HPL's
trailing update is an (m x NB) by (NB x n) product, so NB should be a k at which DGEMM
runs near its best), with HPL's tuning notes as the fallback.

A sweep ranks the ks only when it was taken on an idle machine: under load its ranking is the
load's (one busy run can put any k first). Its own repeats tell: on an idle machine they agree
(each k's range within STABLE_SPREAD of its median); when they do not, the machine was busy and
the candidates are HPL's usual range instead, and the session says so. Either way NB stays in
HPL's usual range (its tuning notes: good NBs are almost always in [32, 256])."""

from __future__ import annotations

from rmax.stats import STABLE_SPREAD
from rmax.tune.space import FALLBACK_NBS

NEAR_BEST = 0.90     # a k within 10% of the best k's rate is worth trying as NB
MIN_CANDIDATES = 3   # the sweep may have one clear winner; still try its neighbours
FULL_SWEEP = 4       # k points a sweep needs to say where the rate levels off
NB_RANGE = (32, 256)
USUAL = "HPL's usual range (multiples of 32 in [64, 256])"


def busy(points) -> str | None:
    """Why the sweep looks taken on a busy machine (its worst k's spread), or None."""
    worst = max(points, key=lambda p: (p.max - p.min) / p.median if p.median > 0 else 0.0, default=None)
    if worst is None or worst.median <= 0:
        return None
    spread = (worst.max - worst.min) / worst.median
    if spread > STABLE_SPREAD:
        return f"its repeats at k={worst.k} spread {100 * spread:.0f}% (over {100 * STABLE_SPREAD:.0f}%: a busy machine)"
    return None


def from_k_sweep(points) -> list[int]:
    """NB candidates from the k-sweep's points (rmax.families.dgemm.DgemmPoint), best-rated first."""
    pts = [p for p in points if NB_RANGE[0] <= p.k <= NB_RANGE[1] and p.median > 0]
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
        from rmax.families import loaded
        from rmax.model.provenance import Scope, cite

        scope = Scope.here()
        for run in store.list(kind="dgemm", status="ok"):
            got = loaded(run) if scope.on_a_node(run) else None
            if got is None or len(got[1].k) < FULL_SWEEP:
                continue
            why = busy(got[1].k)
            if why:
                return list(FALLBACK_NBS), (f"{USUAL}: the DGEMM k-sweep of {cite(run)} cannot rank NB, {why}; "
                                            "sweep again on an idle machine: `rmax bench dgemm --sweep k`"), run.id
            nbs = from_k_sweep(got[1].k)
            if nbs:
                return nbs, (f"DGEMM k-sweep of {cite(run)} on an idle machine (its repeats agree within "
                             f"{100 * STABLE_SPREAD:.0f}%; k in [{NB_RANGE[0]}, {NB_RANGE[1]}] within "
                             f"{100 - NEAR_BEST * 100:.0f}% of the best rate)"), run.id
    return list(FALLBACK_NBS), (f"{USUAL}; no dgemm run with a k sweep stored here: run "
                                "`rmax bench dgemm --sweep k`"), None
