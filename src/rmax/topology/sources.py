"""Where switch groups come from: a stored inference, a cluster.toml, or a virtual
cluster's declaration (the all-pairs runs they are inferred from: topology/allpairs.py)."""

from __future__ import annotations

from rmax.errors import MissingData, RmaxError


def stored_groups(store, force: bool = False) -> tuple[list[list[str]], str]:
    """The latest inference's switch groups; an undecided one only when its candidates agree on the
    switches (they differ in the levels above, which placement does not use) or when forced (then
    its coarsest candidate)."""
    runs = store.list(kind="topology", status="ok", limit=1)
    if not runs:
        raise MissingData("no switch groups known",
                        hint="run `rmax topology infer`, or give --topology cluster.toml")
    s = runs[0].summary
    if s.get("answer") == "undecided" and not s.get("switches_decided") and not force:
        raise RmaxError(f"the latest inference (topology run {runs[0].id[:8]}) is undecided between "
                        f"{len(s.get('candidates') or [])} layouts: no switch groups to place by",
                        hint="measure what `rmax topology infer` names and infer again, give --topology "
                             "cluster.toml, or --force to place by its coarsest candidate")
    how = s.get("answer") or "layout"     # which of the three answers the groups come from
    if how == "undecided":
        how = "undecided: the switches decided, the levels above them not" if s.get("switches_decided") else \
            "undecided, forced"
    return s["groups"], f"topology run {runs[0].id[:8]} ({how})"


def groups_for(topology_file: str | None, launcher: str | None, force: bool = False,
               vcluster: str | None = None) -> tuple[list[list[str]], str]:
    """Switch groups for placement: the cluster.toml given, else a virtual cluster's
    declared layout when launching on one (vcluster: the one named, else $RMAX_VCLUSTER or the
    only one up), else the latest stored inference (undecided: only when forced)."""
    from rmax.topology.declared import read_groups

    if topology_file:
        return read_groups(topology_file)[1], topology_file
    if launcher == "vcluster":
        from rmax.vcluster.state import LAUNCH_HOW, find

        st = find(vcluster, LAUNCH_HOW)
        return read_groups(st.cluster_toml)[1], str(st.cluster_toml)
    from rmax.store import open_store

    with open_store() as store:
        return stored_groups(store, force)


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
