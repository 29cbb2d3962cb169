"""The launch options every MPI command shares (rmax.launch.request makes the LaunchSpec of them)."""

from __future__ import annotations

import os

import click

from rmax.params import HOSTFILE, HOSTS, TIMEOUT, Count, Interface
from rmax.launch import REGISTRY
from rmax.launch.base import MAX_RANKS

VCLUSTER_VARIABLE = "RMAX_VCLUSTER"


def use_vcluster(ctx, param, name):
    """--vcluster NAME is RMAX_VCLUSTER=NAME for this command: every path that launches on a
    virtual cluster (the launcher, placement, survey steps) reads the cluster from there."""
    if name:
        from rmax.vcluster import find

        find(name)   # a cluster that is not up is refused before anything runs
        os.environ[VCLUSTER_VARIABLE] = name
    return name


vcluster_option = click.option("--vcluster", metavar="NAME", default=None, expose_value=False, callback=use_vcluster,
                               help="Virtual cluster for --launcher vcluster (default: $RMAX_VCLUSTER, else the "
                                    "only one up).")


def launch_options(default_np: str = "cores"):
    """--np, --hosts, --hostfile, --launcher, --bind, --blas-threads, --oversubscribe, --timeout, --net-if,
    --vcluster."""

    def decorate(f):
        opts = [
            click.option("--np", "np", type=Count(1, MAX_RANKS), default=None,
                         help=f"MPI ranks (default: {default_np})."),
            click.option("--hosts", type=HOSTS, default=None, help="Hosts and slots, e.g. a:2,b:2."),
            click.option("--hostfile", type=HOSTFILE, default=None, help="Hostfile ('host slots=N' lines)."),
            click.option("--launcher", type=click.Choice(sorted(REGISTRY)), default=None,
                         help="Launcher (default: srun inside Slurm, else mpirun)."),
            click.option("--bind", type=click.Choice(["core", "socket", "none"]), default="core", show_default=True,
                         help="Process binding."),
            click.option("--blas-threads", type=Count(1, 4096), default=1, show_default=True, help="BLAS threads per rank."),
            click.option("--oversubscribe", is_flag=True, help="Allow more ranks than slots."),
            click.option("--timeout", type=TIMEOUT, default=600.0, show_default=True,
                         help="Seconds before the watchdog kills the job."),
            click.option("--net-if", "net_if", type=Interface(), default=None,
                         help="Interface MPI uses between hosts (default: the one routing to them; loopback on one host)."),
            vcluster_option,
        ]
        for o in reversed(opts):
            f = o(f)
        return f

    return decorate
