"""Helpers for the virtual-cluster tests: unique names, leftover detection, forced teardown."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import subprocess
from pathlib import Path

import pytest

from rmax.topology.placement import Slot

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="virtual clusters need root")
needs_mpi = pytest.mark.skipif(not shutil.which("mpirun"), reason="Open MPI's mpirun is not installed")


def unique_name() -> str:
    """6 characters, a letter first; random so parallel sessions never share objects. The first ones
    are $RMAX_TEST_CLUSTER_PREFIX where one is set (a session's own tag), else v."""
    prefix = os.environ.get("RMAX_TEST_CLUSTER_PREFIX", "v")[:4] or "v"
    return prefix + secrets.token_hex(3)[:6 - len(prefix)]


def leftovers(name: str) -> list[str]:
    """Every trace of cluster `name` on this machine: namespaces, links, hosts lines, state, and
    processes (Slurm and munge daemons) whose command line or environment names the cluster's folder."""
    out = []
    ns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split()
    out += [f"netns {n}" for n in ns if n.startswith(f"{name}-")]
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    for line in links.splitlines():
        ifname = line.split(":")[1].strip().split("@")[0]
        if ifname.startswith((f"{name}-", f"{name}t")):
            out.append(f"link {ifname}")
    if f"rmax-vcluster {name} " in Path("/etc/hosts").read_text():
        out.append("/etc/hosts block")
    from rmax.vcluster.state import cluster_dir

    if cluster_dir(name).exists():
        out.append(f"state {cluster_dir(name)}")
    out += [f"cgroup {d}" for d in _cgroups(name)]
    marker = f"{cluster_dir(name)}/".encode()
    for proc in Path("/proc").iterdir():
        try:
            # slurmdbd names the folder only in its environment (SLURM_CONF)
            if proc.name.isdigit() and any(marker in (proc / f).read_bytes() for f in ("cmdline", "environ")):
                out.append(f"process {proc.name}")
        except OSError:
            continue
    return out


def _cgroups(name: str) -> list[Path]:
    """The cgroups of cluster `name`'s pinned nodes that exist."""
    from rmax.errors import RmaxError
    from rmax.vcluster import cgroups

    try:
        roots = [h.root for h in cgroups.find_hierarchies()]
    except RmaxError:
        return []
    return sorted(d for r in roots for d in r.glob(f"{cgroups.PREFIX}{name}-*"))


def force_down(name: str) -> None:
    from rmax.vcluster import state as st
    from rmax.vcluster.lifecycle import down

    s = st.load(name)
    if s is not None:
        down(s)




@pytest.fixture(scope="module")
def cluster():
    """4 nodes on 2 switches; links 1 gbit/s, the trunk 100 Mbit/s."""
    if os.geteuid() != 0:
        pytest.skip("virtual clusters need root")
    with temporary_cluster(4, 2, link="1gbit", trunk="100mbit") as state:
        yield state


@contextlib.contextmanager
def temporary_cluster(nodes: int, switches: int, **shaping):
    """A cluster with a unique name, made the current one (other clusters may be up at the same
    time), torn down afterwards and checked to leave nothing behind."""
    from rmax.vcluster import up

    name = unique_name()
    old = os.environ.get("RMAX_VCLUSTER")
    os.environ["RMAX_VCLUSTER"] = name
    try:
        yield up(name, nodes, switches, **shaping)
    finally:
        force_down(name)
        if old is None:
            os.environ.pop("RMAX_VCLUSTER", None)
        else:
            os.environ["RMAX_VCLUSTER"] = old
        assert leftovers(name) == []


def parse_rankfile(text: str) -> list[Slot]:
    """The ranks of a rankfile written by rankfile_text (rmax itself only writes them)."""
    out: dict[int, Slot] = {}
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        left, _, right = line.partition("=")
        rank = int(left.split()[1])
        host, _, slot = right.partition(" slot=")
        out[rank] = Slot(host.strip(), int(slot) if slot.isdigit() else 0)
    return [out[r] for r in sorted(out)]
