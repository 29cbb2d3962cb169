"""Where switch groups come from: a stored all-pairs measurement (to infer
them), a stored inference, a cluster.toml, or a virtual cluster's declaration."""

from __future__ import annotations

from rmax.errors import MissingData, RmaxError

# Run kinds holding all-pairs matrices: the MPI all-pairs benchmark (`rmax bench
# matrix`) and the virtual cluster's own TCP probe (`rmax vcluster probe`).
MATRIX_KINDS = ("matrix", "tcp-matrix")


def matrices(run) -> tuple[list[str], list | None, list | None]:
    """(hosts, latency s, bandwidth bytes/s) of an all-pairs run: `rmax bench matrix`'s typed
    summary, or the virtual cluster's TCP probe."""
    if run.kind == "matrix":
        from rmax.bench.family import StaleSummary, get

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


def _per_host(rank_hosts: list[str], m: list | None) -> tuple:
    """(unique hosts, host x host matrix of medians over rank pairs on distinct hosts)."""
    import statistics

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


def stored_groups(store) -> tuple[list[list[str]], str]:
    runs = store.list(kind="topology", status="ok", limit=1)
    if not runs:
        raise MissingData("no switch groups known",
                        hint="run `rmax topology infer`, or give --topology cluster.toml")
    return runs[0].summary["groups"], f"topology run {runs[0].id[:8]}"


def groups_for(topology_file: str | None, launcher: str | None) -> tuple[list[list[str]], str]:
    """Switch groups for placement: the cluster.toml given, else a virtual cluster's
    declared layout when launching on one, else the latest stored inference."""
    from rmax.topology.declared import read_groups

    if topology_file:
        return read_groups(topology_file)[1], topology_file
    if launcher == "vcluster":
        from rmax.vcluster.state import LAUNCH_HOW, find

        st = find(None, LAUNCH_HOW)
        return read_groups(st.cluster_toml)[1], str(st.cluster_toml)
    from rmax.store import open_store

    with open_store() as store:
        return stored_groups(store)


def known_groups(topology: str | None, launcher: str | None) -> tuple[list[list[str]] | None, str]:
    """Switch groups and where they came from; (None, why not) when none are known: then
    a benchmark goes on without them (bisect: random cuts only; matrix: one class of pairs).
    Host names go into an argument 'h1,h2;h3,h4', so they must not hold those separators."""
    try:
        found, source = groups_for(topology, launcher)
    except RmaxError as e:
        if topology:
            raise
        return None, e.message
    for g in found:
        bad = [h for h in g if not h or any(c in h for c in ",; ")]
        if bad:
            raise RmaxError(f"switch group host name '{bad[0]}' from {source} is not a host name")
    return found, source
