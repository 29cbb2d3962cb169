"""A survey that loses nodes goes on without them: a node whose link is down from the start is left
out by the reachability check before the first launch, a node whose link goes down during a
per-node step is named lost within --lost-after plus the check's time, and every later step
(the network steps and HPL, its grid chosen for the nodes left) runs on the others and ends ok;
the survey ends partial (exit 3) naming both, or failed (exit 1) with --require-all-nodes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from rmax.store import open_store
from vcutil import needs_mpi, needs_root, temporary_cluster

pytestmark = [needs_root, needs_mpi]

PER_NODE = ("memlat", "stream", "memcopy")


def link(node: str, state: str) -> None:
    subprocess.run(["ip", "netns", "exec", node, "ip", "link", "set", "eth0", state], check=True)


@pytest.fixture(scope="module")
def cluster():
    with temporary_cluster(5, 1, link="1gbit") as state:
        yield state


def survey(db, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "rmax", "--db", str(db), "survey", "--quick", "--lost-after", "5", "--budget", "40",
                             "--steps", ",".join(("inventory", *PER_NODE, "coll", "ring", "hpl")), "--json", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "RMAX_VCLUSTER": os.environ["RMAX_VCLUSTER"]})


def test_a_survey_goes_on_without_nodes_lost_before_and_during_it(cluster, tmp_path):
    n1, n2, n3, n4, n5 = (n.name for n in cluster.plan.nodes)
    db = tmp_path / "s.db"
    link(n5, "down")   # down from the start
    # n4's link goes down in a per-node step, n3's in a multi-node one (coll)
    faults = {n4: lambda r: r.kind in PER_NODE and r.hosts == [n4], n3: lambda r: r.kind == "coll"}
    cut: dict[str, float] = {}
    try:
        t0 = time.monotonic()
        proc = survey(db, "--vcluster", cluster.name)
        while proc.poll() is None and time.monotonic() - t0 < 400:
            if len(cut) < len(faults) and db.exists():
                with open_store(str(db)) as store:
                    runs = store.list(limit=50)
                for node, when in faults.items():
                    if node not in cut and any(when(r) and r.status == "running" for r in runs):
                        link(node, "down")
                        cut[node] = time.monotonic() - t0
            time.sleep(0.2)
        out, err = proc.communicate(timeout=60)
    finally:
        for node in (n3, n4, n5):
            link(node, "up")
    assert set(cut) == {n3, n4}, (cut, err[-2000:])
    assert proc.returncode == 3, err[-3000:]
    rec = json.loads(out)
    lost = {x["host"]: x for x in rec["summary"]["lost"]}
    assert set(lost) == {n3, n4, n5}, lost
    assert lost[n5]["step"] == "start" and "no answer to a launch" in lost[n5]["why"]
    assert lost[n4]["step"] in PER_NODE and "no heartbeat" in lost[n4]["why"], lost[n4]
    # named by coll's watchdog (silent and unanswering), or by the check after coll failed on it
    assert lost[n3]["step"] == "coll" and (f"host {n3} lost" in lost[n3]["why"] or
                                           "no answer to a launch" in lost[n3]["why"]), (lost[n3], cut)
    for node in (n3, n4):   # named within --lost-after + the check's time
        assert lost[node]["at_s"] - cut[node] < 30, (lost[node], cut)
    steps = {s["step"]: s for s in rec["summary"]["steps"]}
    assert all(steps[s]["status"] == "ok" for s in ("coll", "ring", "hpl")), \
        {k: (s["status"], s.get("error")) for k, s in steps.items()}
    assert steps["coll"]["retried"]["lost"] == [n3]   # run once more without it
    assert rec["summary"]["nodes"] == [n1, n2]
    with open_store(str(db)) as store:
        runs = store.children(rec["id"])
    later = [r for r in runs if r.kind in ("ring", "hpl") or r.id in steps["coll"]["runs"]]
    assert later and all(set(r.hosts) <= {n1, n2} for r in later), [(r.kind, r.hosts) for r in later]
    assert not [r for r in runs if n5 in r.hosts]   # left out before the first launch
    assert "LOST 3 node(s)" in rec["error"] and rec["status"] == "partial"
    assert "LOST" in err and n3 in err


def test_require_all_nodes_fails_the_survey(cluster, tmp_path):
    n4 = cluster.plan.nodes[-1].name
    link(n4, "down")
    try:
        proc = subprocess.run([sys.executable, "-m", "rmax", "--db", str(tmp_path / "s.db"), "survey", "--quick",
                               "--steps", "inventory,stream", "--require-all-nodes", "--vcluster", cluster.name],
                              capture_output=True, text=True, timeout=300)
    finally:
        link(n4, "up")
    assert proc.returncode == 1, proc.stderr[-2000:]
    assert f"LOST 1 node(s), left out of every later step: {n4} (in start" in proc.stdout + proc.stderr
    # the summary's first line: before the nodes it measured
    lines = proc.stdout.splitlines()
    first = next(i for i, x in enumerate(lines) if x.startswith("LOST "))
    assert [i for i, x in enumerate(lines) if "inventory: rmax runs show" in x] and \
        all(i > first for i, x in enumerate(lines) if "inventory: rmax runs show" in x), proc.stdout
