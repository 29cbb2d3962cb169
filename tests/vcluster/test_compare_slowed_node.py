"""`rmax compare` on whole surveys of a pinned 2-node virtual cluster: two sets of identical
surveys differ in nothing significant; against surveys taken while node 2's CPU time is capped,
every significant slowdown is on node 2, and there is at least one."""

from __future__ import annotations

import contextlib
import json
import os

import pytest

from cliutil import run_cli
from cpucap import has_cap, set_cap
from vcutil import needs_mpi, needs_root, temporary_cluster

# STREAM's figure is its best repetition. peakflops is left out: its peak is the fastest 5 ms block,
# and its 12 figures would weaken Holm's adjustment.
STEPS = "stream"
REPEATS = 3   # surveys a side: independent repeats for Welch's test (the cap gave p(Holm) 1e-7 to 1e-9 with 4)
# Node 2's cap: this share of its CPU in every period of PERIOD_US. A busy process sharing the core
# is no sure slow-down of a best repetition: on a guest where one core alone streams 43 GB/s, quick
# STREAM's repetitions last 2-7 ms, about one scheduler slice, and the best of 10 found one that ran
# whole (24-30 GB/s, as without it). A repetition longer than the cap's quota is throttled every time.
CAP, PERIOD_US = 0.2, 10_000


def survey(name: str, nodes: list[str]) -> str:
    rec = json.loads(run_cli("survey", "--busy-ok", "--vcluster", name, "--steps", STEPS, "--quick", "--json",
                             check=True, timeout=180).stdout)
    assert rec["status"] == "ok" and rec["hosts"] == nodes, rec
    return rec["id"]


@contextlib.contextmanager
def capped(state, node: str):
    """The node's CPU time capped at CAP of one CPU (its cgroup's CFS quota)."""
    dirs = [d for d in state.cgroups(node) if has_cap(d)]
    if not dirs:
        pytest.skip("no cpu controller for the node's cgroup: nothing to cap its CPU time with")
    (d,) = dirs
    set_cap(d, CAP, PERIOD_US)
    try:
        yield
    finally:
        set_cap(d, None, PERIOD_US)


def table(changes: list[dict]) -> str:
    """The changes, one line each, for a failure's message."""
    return "\n" + "\n".join(f"{c['host']} {c['metric']}: {c['a']:.3g} -> {c['b']:.3g} {c['unit']} "
                             f"p(Holm)={c['p_adjusted']} significant={c['significant']}" for c in changes)


def compare(a: list[str], b: list[str]) -> list[dict]:
    # Changes under 25 % are this shared guest's drift between surveys minutes apart (5 % is the
    # default): two nodes on one memory bus read 24-28 GB/s each, or 43 when one runs alone; identical
    # sets drifted by up to 17.5 % in 5 runs, and by 10.2 % with p(Holm) 0.045 once. The cap cuts node
    # 2's STREAM kernels by 31-67 %, the most-cut one by 52 % or more.
    return json.loads(run_cli("compare", ",".join(a), ",".join(b), "--json", "--min-change", "25",
                              check=True).stdout)["changes"]


@needs_root
@needs_mpi
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="two pinned nodes need two CPUs")
def test_compare_flags_only_the_slowed_node(db):
    with temporary_cluster(2, 1, pin_cpus=True) as state:
        nodes = [n.name for n in state.plan.nodes]
        # The three sets taken in turn, so that a slowdown of the whole guest lands on all of them
        # (taken one set after the other, two identical sets once differed significantly: STREAM
        # 19 -> 10-12 GB/s on both nodes). The slowed survey opens every round and the two identical
        # sets take the other places in turn, so each follows the slowed survey as often as the
        # other: the surveys just after it were 20 % faster on both nodes than the next ones in a suite
        # run, and a rotation of all three (a after it twice, same once) made the identical sets differ
        # in another (both nodes' STREAM 12-19 % lower in `same`, p(Holm) 0.01-0.04 on node 2).
        a, same, slowed = [], [], []
        for i in range(REPEATS):
            with capped(state, nodes[1]):
                slowed.append(survey(state.name, nodes))
            for got in (a, same) if i % 2 == 0 else (same, a):
                got.append(survey(state.name, nodes))

    unchanged = compare(a, same)
    # every STREAM kernel of both nodes paired, each decided on REPEATS surveys a side
    assert {(c["host"], c["metric"].split(" (")[0]) for c in unchanged} == {
        (n, f"STREAM {k}") for n in nodes for k in ("Copy", "Scale", "Add", "Triad")}
    assert all(c["n_a"] == c["n_b"] == REPEATS and c["significant"] is not None for c in unchanged)
    assert not any(c["significant"] for c in unchanged), table(unchanged)

    changes = compare(a, slowed)
    print("identical:", table(unchanged), "\nnode 2 slowed:", table(changes))   # shown by pytest -s
    flagged = [c for c in changes if c["significant"]]
    # Node 1 may truly speed up: both nodes run STREAM at once on one memory bus, and node 2's
    # smaller share leaves node 1 more bandwidth (a CI run saw node 1 +23 %, p(Holm) 0.03, while
    # node 2 fell 43 %). What must not happen is a slowdown named on the node left alone.
    assert all(c["host"] == nodes[1] for c in flagged if c["change"] < 0), table(changes)
    assert all(c["change"] < 0 for c in flagged if c["host"] == nodes[1]), table(changes)
    # Holm over 8 metrics asks p < 0.006 of the first: a busy process sharing node 2's core (the
    # slow-down before the cap) left all four kernels at p 0.057-0.074 (20 -> 10 GB/s) with 3 surveys
    # a side; the cap's (34 -> 10-12 GB/s, 4 a side) gave p 1e-7 to 1e-9
    assert any(c["metric"].startswith("STREAM") and c["host"] == nodes[1] for c in flagged), table(changes)
