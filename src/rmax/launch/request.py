"""From what a user asked for (ranks, hosts, a hostfile, binding, threads) to the LaunchSpec
that runs it: the CLI, the survey and the tuner all make their specs here."""

from __future__ import annotations

from rmax.errors import RmaxError
from rmax.launch.allocation import allocation_hosts
from rmax.launch.base import Host, LaunchSpec
from rmax.launch.hosts import local_slots, parse_hosts, read_hostfile


def resolve_hosts(hosts: str | None, hostfile: str | None, launcher: str | None = None,
                  vcluster: str | None = None) -> tuple[str | None, list[Host] | None, str | None]:
    """(launcher, nodes, hostfile) from a command's host options, the one reading of them: --hosts
    or --hostfile (not both); --vcluster NAME, that cluster's launcher and its nodes unless the hosts
    narrow them (launch/vcluster.on_cluster); else inside a Slurm allocation its nodes (None: this
    node only); and --launcher vcluster with no hosts, the cluster's nodes (else every step would
    measure this host)."""
    if hosts and hostfile:
        raise RmaxError("give --hosts or --hostfile, not both")
    if vcluster:
        from rmax.launch.vcluster import on_cluster

        launcher, hosts, hostfile = on_cluster(vcluster, launcher, hosts, hostfile)
    host_list = parse_hosts(hosts) if hosts else read_hostfile(hostfile) if hostfile else allocation_hosts()
    if launcher == "vcluster" and not host_list:
        from rmax.vcluster.state import LAUNCH_HOW, find

        hostfile = str(find(vcluster, LAUNCH_HOW).hostfile)
        host_list = read_hostfile(hostfile)
    return launcher, host_list, hostfile


def spec_from_options(program: list[str], np: int | None, hosts: str | None, hostfile: str | None,
                      bind: str, blas_threads: int, oversubscribe: bool, default_np: int | None = None,
                      net_if: str | None = None, **_ignored) -> LaunchSpec:
    _, host_list, _ = resolve_hosts(hosts, hostfile)
    if np is None:
        np = default_np or (sum(h.slots for h in host_list) if host_list else local_slots())
    return LaunchSpec(program=program, np=np, hosts=host_list, hostfile=hostfile, bind=bind,
                      blas_threads=blas_threads, oversubscribe=oversubscribe, net_if=net_if)
