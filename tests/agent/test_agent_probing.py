"""The agent on a node that gets busy: a probe in progress is stopped when work arrives (stored as
interrupted) and probing resumes when the node is idle again; a node slowed on purpose (a competing
process pinned to its core) is flagged as drifting from its own baseline. About 40 s."""

from __future__ import annotations

import os
import subprocess
import urllib.request

import pytest

from agentutil import Agent, CpuBudget, runs, spin, stop_all, wait_for
from cliutil import run_cli


def test_work_arriving_stops_the_probe_and_the_agent_resumes_when_idle(db):
    # The machine is shared: the threshold sits well above the load already here, the work well above it.
    limit = max(8, int(os.getloadavg()[0]) + 4)
    # STREAM: at least 10 repetitions whatever the time, so work that takes the cores stretches the probe
    agent = Agent(db, "--probes", "stream", "--interval", "1", "--window", "0.5", "--retry", "1",
                  "--max-load", str(limit), "--listen", "127.0.0.1:0")
    work = []
    try:
        before = {r["id"] for r in runs(db)}
        probe = wait_for(lambda: [r for r in runs(db) if r["status"] == "running" and r["id"] not in before], 60,
                         "a probe to start", period=0.02)[0]
        work = [spin() for _ in range(limit + 8)]
        stopped = wait_for(lambda: [r for r in runs(db) if r["id"] == probe["id"] and r["status"] != "running"],
                           30, "the probe to stop")[0]
        assert stopped["status"] == "interrupted", stopped
        assert "work arrived" in stopped["error"] and "load of other processes" in stopped["error"]
        live = wait_for(lambda: agent.rates()["agent"]["busy_reason"], 10, "the agent to say why it waits")
        assert "max_load" in live
        stop_all(work)
        work = []
        done = {r["id"] for r in runs(db)}
        wait_for(lambda: [r for r in runs(db) if r["id"] not in done and r["status"] == "ok"], 60,
                 "a probe once the node is idle again")
    finally:
        stop_all(work)
        assert agent.stop() == 0
    assert not [r for r in runs(db) if r["status"] == "running"]


@pytest.mark.skipif(not CpuBudget.available(), reason="needs root and the cgroup cpu controller")
def test_a_node_slowed_on_purpose_is_flagged(db):
    """The node is one core (the agent pinned to it) in a cgroup of high weight, so that the machine's
    other sessions leave it alone; after a baseline, a competing process pinned to the same core,
    in the same cgroup, takes half of it. DGEMM shows it (its rate about halves);
    the peakflops peak (the fastest 5 ms block) is built to see through time-sharing and moves less."""
    cpu = max(os.sched_getaffinity(0))
    group = CpuBudget()
    # --window 0.25: the shortest idle check before each set (--max-load lets any load pass)
    agent = Agent(db, "--probes", "dgemm", "--interval", "0.5", "--window", "0.25", "--max-load", "1000",
                  "--min-history", "5", "--recent", "3", "--alpha", "0.05", "--listen", "127.0.0.1:0",
                  prefix=["taskset", "-c", str(cpu)], on_start=group.enter)
    work = []

    def dgemm():
        return next((r for r in agent.rates()["rates"] if r["probe"] == "dgemm"), None)

    try:
        wait_for(lambda: (p := dgemm()) and len(p["recent"]) + p["n_baseline"] >= 5, 90,
                 "a baseline of the node's own DGEMM rate")
        work.append(subprocess.Popen(["taskset", "-c", str(cpu), "sh", "-c", "while :; do :; done"],
                                     preexec_fn=group.enter))
        flagged = wait_for(lambda: (p := dgemm()) and p["drift"] and p, 90, "the drift to be flagged")
        with urllib.request.urlopen(agent.url + "/metrics", timeout=10) as r:
            metrics = r.read().decode()
        assert flagged["p_value"] < 0.05 and flagged["deviation"] < 0 and flagged["n_baseline"] >= 5
        assert 'rmax_probe_state{peer="",probe="dgemm",state="drift"} 1.0' in metrics
        assert agent.stop() == 0     # the probe in progress is stored interrupted: the history stays as seen
        shown = run_cli("agent", "status", "--min-history", "5", "--recent", "3", "--alpha", "0.05", timeout=60,
                        check=True).stdout
        assert "DRIFT" in shown and "drift: dgemm" in shown
    finally:
        stop_all(work)
        agent.stop()
        group.remove()
