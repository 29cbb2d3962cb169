"""No process of an MPI job listens on a wildcard address: on one host everything
listens on loopback, on a virtual cluster on the nodes' own addresses. Watched with
`ss` while real jobs run (Open MPI, MPICH, and Open MPI across two namespaces)."""

from __future__ import annotations

import ctypes.util
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cliutil import ROOT
from rmax.launch import LaunchSpec, prepare

WILDCARDS = ("0.0.0.0", "*", "[::]")


def _sockets(netns: str | None = None) -> list[tuple[str, str, str, set[int]]]:
    """(netid, local address, process names, pids) of every listening TCP socket and every UDP socket."""
    argv = ["ss", "-Hantup"]
    if netns:
        argv = ["ip", "netns", "exec", netns, *argv]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=10).stdout
    rows = []
    for line in out.splitlines():
        f = line.split()
        if len(f) < 6 or (f[0] == "tcp" and f[1] != "LISTEN"):
            continue
        users = f[6] if len(f) > 6 else ""
        procs = re.findall(r'"([^"]+)",pid=(\d+)', users)
        pids = {int(pid) for _, pid in procs}
        names = ",".join(sorted({name for name, _ in procs}))
        rows.append((f[0], f[4].rsplit(":", 1)[0], names, pids))
    return rows


def _tree(root: int) -> set[int]:
    """root and every process descended from it."""
    parent = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                parent[int(d.name)] = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    tree, grew = {root}, True
    while grew:
        new = {p for p, pp in parent.items() if pp in tree} - tree
        tree |= new
        grew = bool(new)
    return tree


def _watch(argv: list[str], namespaces=(), env=None, timeout=120) -> tuple[int, set[tuple[str, str, str, str]]]:
    """Run argv, polling ss until it ends: (exit status, {(where, netid, address, process names)}).
    In this host's namespace only the job's own processes count; a node namespace is the job's alone."""
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True)
    seen = set()
    deadline = time.monotonic() + timeout
    try:
        while proc.poll() is None and time.monotonic() < deadline:
            tree = _tree(proc.pid)
            for netid, addr, names, pids in _sockets():
                if pids & tree:
                    seen.add(("host", netid, addr, names))
            for ns in namespaces:
                seen |= {(ns, netid, addr, names) for netid, addr, names, _ in _sockets(ns)}
            time.sleep(0.1)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, 9)
        err = proc.communicate()[1]
    assert proc.returncode == 0, err
    return proc.returncode, seen


def _rmax(*args: str) -> list[str]:
    return [sys.executable, "-m", "rmax", *args]


def _env(db: Path) -> dict:
    return {**os.environ, "RMAX_DB": str(db), "PYTHONPATH": str(ROOT / "src")}


def _loopback(addr: str) -> bool:
    return addr.startswith("127.") or addr == "[::1]"


@pytest.mark.skipif(not shutil.which("mpirun"), reason="Open MPI's mpirun is not installed")
def test_open_mpi_job_on_one_host_listens_on_loopback_only(tmp_path):
    _, seen = _watch(_rmax("bench", "net", "--quick", "--layers", "mpi,tcp,udp", "--sizes", "8,65536",
                           "--budget", "0.2"), env=_env(tmp_path / "r.db"))
    names = {s[3] for s in seen}
    assert any("mpirun" in n for n in names) and any("rmax-net" in n for n in names), seen  # the job was seen
    assert [s for s in seen if not _loopback(s[2])] == [], seen


MPICH_RANK = """
import ctypes, sys, time
mpi = ctypes.CDLL("libmpich.so.12", mode=ctypes.RTLD_GLOBAL)   # no MPICH headers needed
assert mpi.MPI_Init(None, None) == 0
assert mpi.MPI_Barrier(0x44000000) == 0                         # MPI_COMM_WORLD in MPICH's mpi.h
time.sleep(1.5)
assert mpi.MPI_Barrier(0x44000000) == 0
mpi.MPI_Finalize()
"""


@pytest.mark.skipif(not shutil.which("mpiexec.mpich") or not ctypes.util.find_library("mpich"),
                    reason="MPICH is not installed")
def test_mpich_job_on_one_host_listens_on_loopback_only(tmp_path):
    script = tmp_path / "rank.py"
    script.write_text(MPICH_RANK)
    argv = prepare(LaunchSpec(program=[sys.executable, str(script)], np=2, bind="none"), "mpiexec")
    _, seen = _watch(argv)
    names = {s[3] for s in seen}
    assert any("mpiexec" in n for n in names), seen
    assert [s for s in seen if not _loopback(s[2])] == [], seen


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("mpirun"), reason="virtual clusters need root and Open MPI")
def test_two_node_virtual_cluster_job_listens_on_the_cluster_network_only(tmp_path):
    sys.path.insert(0, str(ROOT / "tests" / "vcluster"))
    from vcutil import force_down, leftovers, unique_name

    from rmax.vcluster import up

    name = unique_name()
    try:
        state = up(name, 2, 1)
        own = {n.name: n.address for n in state.plan.nodes}
        _, seen = _watch(_rmax("bench", "net", "--launcher", "vcluster", "--quick", "--layers", "mpi,tcp,udp",
                               "--sizes", "8,65536", "--budget", "0.2"), namespaces=list(own),
                         env={**_env(tmp_path / "r.db"), "RMAX_VCLUSTER": name})
    finally:
        force_down(name)
    assert leftovers(name) == []
    first, second = own
    assert any(w == first and "mpirun" in n for w, _, _, n in seen), seen     # the launching node
    assert any(w == second and "orted" in n for w, _, _, n in seen), seen     # the daemon on the other node
    bad = [s for s in seen if s[2] in WILDCARDS or not (_loopback(s[2]) or s[2] == own.get(s[0]))]
    assert bad == [], seen


def test_launch_argv_confines_the_job_to_its_network():
    from rmax.launch import get_launcher
    from rmax.launch.hosts import Host

    one = get_launcher("mpirun").argv(LaunchSpec(program=["p"], np=1))
    assert one[0] == "env" and one[1].startswith("LD_PRELOAD=") and "librmax-bindaddr.so" in one[1]
    assert "RMAX_BIND_NET=127.0.0.0/8" in one
    assert one[one.index("oob_tcp_if_include") + 1] == one[one.index("btl_tcp_if_include") + 1] == "127.0.0.0/8"
    assert "orte_launch_agent" not in one                      # no remote daemons on one host
    # another host (TEST-NET-1, routed, never real): the route's subnet, plus the host itself when outside it
    two = LaunchSpec(program=["p"], np=2, hosts=[Host("localhost", 1), Host("192.0.2.1", 1)], net_if="lo")
    argv = get_launcher("mpirun").argv(two)
    assert "RMAX_BIND_NET=127.0.0.0/8,192.0.2.1/32" in argv
    agent = argv[argv.index("orte_launch_agent") + 1]
    assert agent.startswith("env LD_PRELOAD=") and agent.endswith(" orted")  # daemons started by ssh get it too
    hydra = get_launcher("mpiexec").argv(LaunchSpec(program=["p"], np=1))
    assert hydra[hydra.index("-iface") + 1] == "lo" and "UCX_NET_DEVICES=lo" in hydra
