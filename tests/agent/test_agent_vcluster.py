"""One agent per node of a virtual cluster, each with its own store and endpoint on its node's
address and a CPU budget of 0.4 of a core; one node's budget is cut to 0.2, and `rmax agent
fleet` (from the endpoints, inside the cluster network, and from the stores) names that node.
The first node also ping-pongs to the second through the vcluster launcher. About 40 s with the
cluster's set-up on a quiet machine."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "vcluster"))

from agentutil import Agent, CpuBudget, env_for, runs, wait_for  # noqa: E402
from vcutil import cluster, needs_mpi  # noqa: E402,F401  (the 4-node, 2-switch cluster)

PORT = 9477
FAST, SLOW = 0.4, 0.2     # CPU budgets, in cores: 4 nodes take 1.4 of the 2


def ok_runs(db, kind: str) -> int:
    return sum(1 for r in runs(db) if r["kind"] == kind and r["status"] == "ok")


def started_runs(db, kind: str) -> int:
    """Runs of `kind` stored so far, the one under way included (a probe stores its run before its kernel starts)."""
    return sum(1 for r in runs(db) if r["kind"] == kind)


@needs_mpi
@pytest.mark.skipif(not CpuBudget.available(), reason="needs root and the cgroup cpu controller")
def test_fleet_names_the_slowed_node(cluster, tmp_path):
    nodes = cluster.plan.nodes
    slow = nodes[2].name
    budgets, agents = {}, {}
    try:
        for n in nodes:
            # Every node capped, so that their high weight leaves the rest of the machine the cores'
            # remainder: uncapped, three probing nodes starved the fleet command (stuck importing at 50 s).
            budgets[n.name] = CpuBudget(FAST)
            extra = ["--peers", nodes[1].name, "--launcher", "vcluster"] if n is nodes[0] else []
            enter = ["nsenter", f"--net=/run/netns/{n.name}", f"--uts={cluster.uts_file(n.name)}", "--"]
            # --window 0.25: the shortest idle check before each set (one load sample; --max-load lets any load pass)
            agents[n.name] = Agent(tmp_path / f"{n.name}.db", "--probes", "dgemm", "--interval", "0.5", "--window",
                                   "0.25", "--max-load", "1000", "--listen", f"{n.address}:{PORT}", *extra,
                                   prefix=enter, on_start=budgets[n.name].enter)
        assert all(a.url == f"http://{n.address}:{PORT}" for n, a in zip(nodes, agents.values()))
        # The slow node's budget is cut once it has started and taken its inventory at full speed (its
        # first probe); the fleet tests each node's last three values (--recent), so three probes that
        # start after the cut must end: a probe already under way at the cut (its run stored) is not one.
        wait_for(lambda: ok_runs(agents[slow].db, "dgemm"), 60, "the first DGEMM probe", period=0.05)
        budgets[slow].limit(SLOW)
        slowed_at = started_runs(agents[slow].db, "dgemm")
        wait_for(lambda: all(ok_runs(a.db, "dgemm") >= 3 for a in agents.values())
                 and ok_runs(agents[slow].db, "dgemm") >= slowed_at + 3
                 and ok_runs(agents[nodes[0].name].db, "net") >= 1, 150, "three DGEMM probes on every node")

        # from the endpoints, inside the cluster network (the host has no address on it)
        first = nodes[0].name
        enter = ["nsenter", f"--net=/run/netns/{first}", f"--uts={cluster.uts_file(first)}", "--"]
        p = subprocess.run([*enter, sys.executable, "-m", "rmax", "agent", "fleet", "--json",
                            *(a.url for a in agents.values())], capture_output=True, text=True, timeout=120,
                           env=env_for(tmp_path / "fleet.db"))
        assert p.returncode == 0, p.stderr
        fleet = json.loads(p.stdout)
        dgemm = next(r for r in fleet["rates"] if r["probe"] == "dgemm")
        assert dgemm["outliers"] == [slow], dgemm
        assert dgemm["nodes"][-1]["host"] == slow                      # ranked last
        ping = {r["probe"]: r for r in fleet["rates"]}
        assert ping["pingpong_latency"]["nodes"][0]["host"] == first   # measured to its peer
        # Seconds, and a ping-pong's: under its 0.4-core quota a node's ranks may wait out a CFS period
        # (100 ms) when throttled: the median read 13 ms in one fresh clone's suite.
        assert 0 < ping["pingpong_latency"]["nodes"][0]["median"] < 0.1
    finally:
        for a in agents.values():
            a.terminate()           # all at once: each ends the probe under way
        for a in agents.values():
            assert a.stop() == 0
        for b in budgets.values():
            b.remove()
    # the same from the stores, once the agents have stopped
    p = subprocess.run([sys.executable, "-m", "rmax", "agent", "fleet", "--json",
                        *(str(a.db) for a in agents.values())], capture_output=True, text=True, timeout=120,
                       env=env_for(tmp_path / "fleet.db"))
    assert p.returncode == 0, p.stderr
    dgemm = next(r for r in json.loads(p.stdout)["rates"] if r["probe"] == "dgemm")
    assert dgemm["outliers"] == [slow], dgemm
    assert all(r["status"] != "running" for a in agents.values() for r in runs(a.db))
