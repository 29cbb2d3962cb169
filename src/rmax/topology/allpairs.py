"""The stored all-pairs runs switch groups are inferred from (`rmax topology infer`), as
host x host matrices: `rmax bench matrix`'s typed summary, or the virtual cluster's TCP probe.
Apart from topology/sources.py because it decodes a benchmark family's summary: the families
(bisect, matrix) ask sources for the groups, so sources sits below bench and this above it."""

from __future__ import annotations

import statistics

from rmax.bench.family import StaleSummary
from rmax.families import get
from rmax.errors import MissingData, RmaxError

# Run kinds holding all-pairs matrices: the MPI all-pairs benchmark (`rmax bench
# matrix`) and the virtual cluster's own TCP probe (`rmax vcluster probe`).
MATRIX_KINDS = ("matrix", "tcp-matrix")


def matrices(run) -> tuple[list[str], list | None, list | None]:
    """(hosts, latency s, bandwidth bytes/s) of an all-pairs run: `rmax bench matrix`'s typed
    summary, or the virtual cluster's TCP probe."""
    if run.kind == "matrix":
        try:
            s = get("matrix").load(run)
        except StaleSummary as e:
            raise RmaxError(f"matrix run {run.id[:8]} was stored by another rmax version ({e})",
                            hint="run `rmax bench matrix` again") from None
        hosts, lat, bw = s.hosts, s.latency or None, s.bandwidth or None
    else:
        hosts, lat, bw = run.summary.get("hosts"), run.summary.get("latency_s"), run.summary.get("bandwidth_Bps")
    if not hosts or (lat is None and bw is None):
        raise RmaxError("the run's summary has no host list with latency or bandwidth matrices",
                        hint="give a run of `rmax bench matrix` or `rmax vcluster probe`")
    if len(set(hosts)) < len(hosts):
        # `rmax bench matrix` measures rank pairs and names each rank's host:
        # switches group hosts, so collapse to one value per host pair.
        names, lat_h = _per_host(list(hosts), lat)
        return names, lat_h, _per_host(list(hosts), bw)[1]
    return list(hosts), lat, bw


def measured_alone(run) -> bool:
    """Whether the run measured its pairs one at a time (the virtual cluster's probe does; `rmax
    bench matrix` with --pairs-at-once 1), so that a pair's rate is its path's and not a share of
    trunks that the round's other pairs cross too."""
    if run.kind != "matrix":
        return True
    return (run.summary or {}).get("pairs_at_once") == 1


def _per_host(rank_hosts: list[str], m: list | None) -> tuple:
    """(unique hosts, host x host matrix of medians over rank pairs on distinct hosts)."""
    names = list(dict.fromkeys(rank_hosts))
    if m is None:
        return names, None
    idx = {h: i for i, h in enumerate(names)}
    vals: dict[tuple[int, int], list[float]] = {}
    for a, ha in enumerate(rank_hosts):
        for b, hb in enumerate(rank_hosts):
            if ha != hb and m[a][b] is not None:
                vals.setdefault((idx[ha], idx[hb]), []).append(m[a][b])
    out = [[statistics.median(vals[(i, j)]) if (i, j) in vals else None for j in range(len(names))]
           for i in range(len(names))]
    return names, out


def with_evidence(store, run_id: str | None = None):
    """(the run to infer from, the later all-pairs runs of some of its hosts, oldest first): the
    measurements an undecided inference asked for (`rmax bench matrix --hosts ...`). A later run
    is evidence for an earlier one when it measured a strict subset of its hosts, or some or all
    of them one pair at a time (the deciding command's run). Without a run id, the latest run is
    the one inferred from unless it is such evidence, and then the run it is evidence for."""
    first = latest_matrix_run(store, run_id)
    runs = sorted((r for k in MATRIX_KINDS for r in store.list(kind=k, status="ok", limit=EVIDENCE_LOOKBACK)),
                  key=lambda r: r.started_at)

    def evidence_for(r, base) -> bool:
        mine, theirs = set(r.hosts or ()), set(base.hosts or ())
        return (r.id != base.id and r.started_at > base.started_at and bool(mine) and mine <= theirs
                and (mine < theirs or measured_alone(r)))
    base = first
    while not run_id:
        wider = [r for r in runs if evidence_for(base, r)]
        if not wider:
            break
        base = wider[-1]
    return base, [r for r in runs if evidence_for(r, base)]


EVIDENCE_LOOKBACK = 50     # stored all-pairs runs looked at for the evidence of one inference


def latest_matrix_run(store, run_id: str | None = None):
    if run_id:
        rec = store.get(run_id)
        if rec.kind not in MATRIX_KINDS:
            raise RmaxError(f"run {rec.id[:8]} is a {rec.kind} run, not an all-pairs matrix",
                            hint="give a run of `rmax bench matrix` or `rmax vcluster probe`")
        return rec
    runs = [r for k in MATRIX_KINDS for r in store.list(kind=k, status="ok", limit=1)]
    if not runs:
        raise MissingData("no all-pairs latency/bandwidth measurement is stored",
                        hint="run `rmax bench matrix` first (on a virtual cluster, `rmax vcluster probe` works too)")
    return max(runs, key=lambda r: r.started_at)
