"""From what a user asked for (ranks, hosts, a hostfile, binding, threads) to the LaunchSpec
that runs it: the CLI, the survey and the tuner all make their specs here."""

from __future__ import annotations

from rmax.errors import RmaxError
from rmax.launch.allocation import allocation_hosts
from rmax.launch.base import LaunchSpec
from rmax.launch.hosts import local_slots, parse_hosts, read_hostfile


def spec_from_options(program: list[str], np: int | None, hosts: str | None, hostfile: str | None,
                      bind: str, blas_threads: int, oversubscribe: bool, default_np: int | None = None,
                      net_if: str | None = None, **_ignored) -> LaunchSpec:
    if hosts and hostfile:
        raise RmaxError("give --hosts or --hostfile, not both")
    # Inside a Slurm allocation the default hosts are its nodes.
    host_list = parse_hosts(hosts) if hosts else read_hostfile(hostfile) if hostfile else allocation_hosts()
    if np is None:
        np = default_np or (sum(h.slots for h in host_list) if host_list else local_slots())
    return LaunchSpec(program=program, np=np, hosts=host_list, hostfile=hostfile, bind=bind,
                      blas_threads=blas_threads, oversubscribe=oversubscribe, net_if=net_if)
