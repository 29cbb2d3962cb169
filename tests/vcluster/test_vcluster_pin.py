"""Pinned virtual nodes (--pin-cpus): each node's ranks run on its own CPUs, in cgroups that
`down` removes; too few CPUs and no cpuset controller are refused."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from cliutil import assert_one_line_error, run_cli
from rmax.errors import RmaxError
from rmax.vcluster.cgroups import Hierarchy, find_hierarchies
from vcutil import needs_mpi, needs_root, temporary_cluster

V1 = ("34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset\n"
      "32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct\n")
V2 = "41 31 0:38 / {root} rw,relatime - cgroup2 cgroup2 rw\n"


def test_the_hierarchies_are_found_in_v1_and_v2(tmp_path):
    assert find_hierarchies(V1) == [Hierarchy(1, Path("/sys/fs/cgroup/cpuset"), ("cpuset",)),
                                    Hierarchy(1, Path("/sys/fs/cgroup/cpu,cpuacct"), ("cpu",))]
    (tmp_path / "cgroup.controllers").write_text("cpu io memory cpuset pids\n")
    assert find_hierarchies(V2.format(root=tmp_path)) == [Hierarchy(2, tmp_path, ("cpuset", "cpu"))]
    # a cgroup2 mount without cpuset (it is bound to v1, or not delegated) cannot pin
    (tmp_path / "cgroup.controllers").write_text("cpu memory\n")
    with pytest.raises(RmaxError, match="cpuset cgroup controller"):
        find_hierarchies(V2.format(root=tmp_path))


def test_more_cpus_than_allowed_is_refused():
    allowed = len(os.sched_getaffinity(0))
    proc = run_cli("vcluster", "up", "--name", "vnone", "--nodes", str(allowed + 1), "--pin-cpus")
    assert_one_line_error(proc, 2, f"needs {allowed + 1} CPUs", f"may use {allowed}")


@needs_root
@needs_mpi
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="two pinned nodes need two CPUs")
def test_a_rank_on_each_pinned_node_runs_on_that_node_s_cpus():
    from rmax.launch import LaunchSpec, prepare, read_hostfile, run_job
    from rmax.native import executable

    with temporary_cluster(2, 1, pin_cpus=True) as state:
        n1, n2 = state.plan.nodes
        assert n1.cpus and n2.cpus and not set(n1.cpus) & set(n2.cpus)
        info = json.loads(run_cli("vcluster", "status", "--name", state.name, "--json", check=True).stdout)[0]
        assert info["healthy"] and [n["cpus"] for n in info["nodes"]] == [n1.cpus, n2.cpus]
        assert all(n["cgroups"] and all(os.path.isdir(d) for d in n["cgroups"]) for n in info["nodes"])
        spec = LaunchSpec([executable("rmax-ranks"), "--json", "-"], np=2, hosts=read_hostfile(state.hostfile),
                          hostfile=str(state.hostfile))
        job = run_job(prepare(spec, "vcluster"), timeout=120)
        assert job.ok, job.stderr_tail
        ranks = [r for r in map(json.loads, job.stdout.splitlines()) if r.get("rank") is not None]
        cpus = {r["host"]: r["cpus"] for r in ranks}
        # one CPU each: the kernel's list is that CPU's number
        assert cpus == {n1.name: ",".join(map(str, n1.cpus)), n2.name: ",".join(map(str, n2.cpus))}, ranks
        # and a command run on a node (no MPI) is confined too
        out = run_cli("vcluster", "exec", "--name", state.name, n2.name, "--", "grep", "Cpus_allowed_list",
                      "/proc/self/status", check=True).stdout
        assert out.split()[-1] == str(n2.cpus[0])


@needs_root
@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="two pinned nodes need two CPUs")
def test_down_removes_the_cgroups_of_a_pinned_up_that_crashed():
    import subprocess
    import sys

    from vcutil import force_down, leftovers, unique_name

    name = unique_name()
    try:
        # it dies as the second cgroup is about to be recorded: the first one exists
        proc = subprocess.run([sys.executable, "-m", "rmax", "vcluster", "up", "--name", name, "--nodes", "2",
                               "--pin-cpus"], capture_output=True, text=True, timeout=60,
                              env={**os.environ, "RMAX_VCLUSTER_CRASH_AFTER": "1"})
        assert proc.returncode == 70, proc.stderr
        assert any(x.startswith("cgroup ") for x in leftovers(name)), leftovers(name)
        down = run_cli("vcluster", "down", "--name", name)
        assert down.returncode == 0, down.stderr
    finally:
        force_down(name)
    assert leftovers(name) == []
