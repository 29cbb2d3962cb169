"""Open MPI's mpirun, or MPICH's Hydra, across the nodes of an rmax virtual cluster.

mpirun itself runs inside the first node's namespaces (as on a real cluster,
where one launches from a node), so the host needs no address on the cluster
network and all MPI traffic stays between the namespaces. Remote daemons are
started through the agent `rmax vcluster up` wrote, Open MPI's stand-in for
ssh. The flags are the ones found necessary for Open MPI 4.1 across
namespaces (see issue 6 and docs/VCLUSTER.md). With the mpich build chosen
(`--mpi mpich`), Hydra's mpiexec does the same: its proxies are started through
the same agent (`-launcher ssh -launcher-exec AGENT`), its ranks talk TCP on the
cluster network only (hydra_env), and yield the shared cores while they wait."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from rmax.errors import RmaxError
from rmax.launch.base import LaunchSpec, Launcher, register
from rmax.launch.hosts import Host, parse_hosts, read_hostfile
from rmax.launch.mpiexec import MpichExec
from rmax.launch.mpirun import OpenMpiRun
from rmax.launch.netscope import JobNetwork


def _cluster_for(spec: LaunchSpec):
    """The cluster a spec addresses: $RMAX_VCLUSTER, else the one whose hostfile or
    node names it uses, else the only cluster that is up."""
    from rmax.vcluster import state as st

    if os.environ.get("RMAX_VCLUSTER"):
        state = st.find(None, st.LAUNCH_HOW)
        check_nodes(state, spec.hosts or [])
        return state
    clusters = [s for s in st.load_all() if s.complete]
    if spec.hostfile:
        hf = Path(spec.hostfile).resolve()
        for s in clusters:
            if hf == s.hostfile.resolve():
                return s
    if spec.hosts:
        wanted = {h.name for h in spec.hosts}
        for s in clusters:
            if wanted <= {n.name for n in s.plan.nodes}:
                return s
        raise RmaxError("hosts " + ", ".join(sorted(wanted)) + " are not all nodes of one virtual cluster",
                        hint="rmax vcluster status lists the nodes")
    return st.find(None, st.LAUNCH_HOW)


def check_nodes(state, hosts: list[Host]) -> None:
    """Hosts given with a named cluster must be its nodes: mpirun inside the cluster would wait
    for any other until its start-up deadline."""
    nodes = {n.name for n in state.plan.nodes}
    outside = [h.name for h in hosts if h.name not in nodes]
    if outside:
        shown = ", ".join(outside[:3]) + (f" and {len(outside) - 3} more" if len(outside) > 3 else "")
        first, last = state.plan.nodes[0].name, state.plan.nodes[-1].name
        raise RmaxError(f"{shown}: not {'a node' if len(outside) == 1 else 'nodes'} of virtual cluster {state.name}",
                        hint=f"its nodes are {first} .. {last} (e.g. --hosts '{state.name}-n[1-2]')")


def on_cluster(name: str, launcher: str | None, hosts: str | None, hostfile: str | None):
    """What --vcluster NAME means for a command's launch options: the cluster's launcher, and its
    nodes, all of them (its hostfile) unless --hosts or --hostfile narrow them. Returns the
    launcher, hosts and hostfile to launch with."""
    from rmax.vcluster import state as st

    if launcher not in (None, VirtualClusterRun.name):
        raise RmaxError(f"--launcher {launcher} conflicts with --vcluster {name}: a virtual cluster's ranks start "
                        "through its own launcher", hint="leave out --launcher, or leave out --vcluster")
    state = st.find(name, st.LAUNCH_HOW)
    if hosts or hostfile:
        check_nodes(state, parse_hosts(hosts) if hosts else read_hostfile(hostfile))
    else:
        hostfile = str(state.hostfile)
    return VirtualClusterRun.name, hosts, hostfile


def vcluster_mca(state) -> list[str]:
    """The Open MPI options that make a job work across this cluster's namespaces."""
    subnet = state.plan.subnet
    mca = {
        "plm_rsh_agent": str(state.agent),   # "ssh" into a node = nsenter into its namespaces
        "plm_rsh_no_tree_spawn": "1",        # every daemon started from the launching node
        "routed": "direct",                  # daemons talk to mpirun directly, not through a tree
        "pml": "ob1",
        "btl": "tcp,self",                   # no shared memory: ranks on different nodes share a kernel
        "osc": "pt2pt",                      # one-sided calls over that btl (rdma cannot use tcp's; ucx would
                                             # pick shared memory, and the default fails in MPI_Win_allocate)
        "btl_tcp_if_include": subnet,        # only the cluster network, never the host's
        "oob_tcp_if_include": subnet,
        "mpi_yield_when_idle": "1",          # the nodes share the host's cores: busy-polling ranks starve each other
    }
    argv = []
    for k, v in mca.items():
        argv += ["--mca", k, v]
    return argv + ["-x", "PMIX_MCA_gds=hash"]


def hydra_env() -> dict[str, str]:
    """What MPICH's ranks (Debian's ch4:ucx) need across this cluster's namespaces (they share the
    host's cores too: MpichExec.confined(crowded=True) has them yield)."""
    return {
        "UCX_TLS": "tcp,self",          # no shared memory through UCX: ranks on different nodes share a kernel
        "UCX_NET_DEVICES": "eth0",      # only the cluster network, never the host's
    }


def without_mca(args: list[str]) -> list[str]:
    """args less Open MPI's `--mca NAME VALUE` settings (a benchmark's mpi_yield_when_idle: netlaunch),
    whose MPICH equivalents hydra_env sets."""
    out, i = [], 0
    while i < len(args):
        if args[i] == "--mca" and i + 2 < len(args):
            i += 3
            continue
        out.append(args[i])
        i += 1
    return out


@register
class VirtualClusterRun(Launcher):
    name = "vcluster"
    command = "mpirun"
    package = "openmpi-bin"
    summary = "Open MPI's mpirun (MPICH's Hydra with --mpi mpich) across the namespaces of an rmax virtual cluster"
    starts_on_first_host = True   # mpirun runs inside the first node of the job (launch/reach.py)

    def family(self) -> str | None:
        """Open MPI, unless --mpi (RMAX_MPI) chose a build of the MPICH family."""
        from rmax.launch.builds import chosen
        from rmax.native import mpi_build

        return mpi_build(chosen()).family if chosen() else "Open MPI"

    def argv(self, spec: LaunchSpec) -> list[str]:
        # No hosts given: the whole cluster, as its hostfile lists it. Done before
        # validation so the slot check counts the cluster's slots, not this host's.
        if not spec.hosts and not spec.hostfile:
            state = _cluster_for(spec)
            spec.hostfile = str(state.hostfile)
            spec.hosts = read_hostfile(state.hostfile)
        if self.family() == "MPICH":
            spec.extra_args = without_mca(spec.extra_args)
        return super().argv(spec)

    def prefix(self, spec: LaunchSpec) -> list[str]:
        state = _cluster_for(spec)
        first = spec.hosts[0].name if spec.hosts else state.plan.nodes[0].name
        # The nodes share this machine's cores: binding each node's first rank to
        # "core 0" would stack them all on one core, so ranks are left unbound.
        net = JobNetwork(state.plan.subnet, "eth0", remote=True)     # every node's eth0 is on the subnet
        if self.family() == "MPICH":
            hydra = MpichExec().confined(dataclasses.replace(spec, bind="none"), net, hydra_env(), crowded=True,
                                         launcher=["-launcher", "ssh", "-launcher-exec", str(state.agent)])
            return [*state.enter(first), *hydra]
        mpirun = OpenMpiRun().confined(dataclasses.replace(spec, bind="none"), net)
        return [*state.enter(first), "env", "PMIX_MCA_gds=hash", *mpirun, *vcluster_mca(state)]

    def available(self) -> bool:
        from rmax.vcluster import state as st

        return super().available() and any(s.complete for s in st.load_all())
