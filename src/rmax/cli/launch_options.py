"""The launch options every MPI command shares (rmax.launch.request makes the LaunchSpec of them)."""

from __future__ import annotations

import functools
import os

import click

from rmax.params import HOSTFILE, HOSTS, TIMEOUT, Count, Interface, Seconds
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
        ctx.meta[VCLUSTER_VARIABLE] = name   # named here, not inherited: the command's launch options follow it
    return name


def use_lost_after(ctx, param, seconds):
    """--lost-after is RMAX_LOST_AFTER for this command: every job it launches (survey steps included)
    reads it in the watchdog (rmax.launch.job.lost_after)."""
    if seconds is not None:
        os.environ["RMAX_LOST_AFTER"] = repr(seconds)
    return seconds


def use_mpi(ctx, param, name):
    """--mpi NAME is RMAX_MPI=NAME for this command: every job it launches (survey steps included)
    runs that build of rmax's MPI executables, through a launcher of that MPI (rmax.launch.builds)."""
    if name:
        from rmax.launch.builds import MPI_VARIABLE
        from rmax.native import mpi_build

        mpi_build(name)   # a build that is not installed is refused before anything runs
        os.environ[MPI_VARIABLE] = name
    return name


mpi_option = click.option("--mpi", metavar="BUILD", default=None, expose_value=False, callback=use_mpi,
                          help="Which build of rmax's MPI executables to run: openmpi, mpich, site (`rmax info` "
                               "lists them; default: $RMAX_MPI, else the launcher's own MPI).")

lost_after_option = click.option("--lost-after", type=Seconds(0, 7 * 86400, lo_open=False), default=None,
                                 expose_value=False, callback=use_lost_after, metavar="SECONDS",
                                 help="Seconds without a heartbeat before a rank's host is asked whether it "
                                      "still starts a program; one that does not is lost and the job stopped (a "
                                      "survey goes on without it) (default: $RMAX_LOST_AFTER, else 15; 0: off).")

vcluster_option = click.option("--vcluster", metavar="NAME", default=None, expose_value=False, callback=use_vcluster,
                               help="Virtual cluster for --launcher vcluster (default: $RMAX_VCLUSTER, else the "
                                    "only one up).")


def _on_named_cluster(callback):
    """A command's callback that, after --vcluster NAME, launches on that cluster: its launcher,
    and its nodes (rmax.launch.vcluster.on_cluster), as `rmax survey --vcluster NAME` does."""

    @functools.wraps(callback)
    def run(*args, **kw):
        name = click.get_current_context().meta.get(VCLUSTER_VARIABLE)
        if name:
            from rmax.launch.vcluster import on_cluster

            kw["launcher"], kw["hosts"], kw["hostfile"] = on_cluster(name, kw["launcher"], kw["hosts"], kw["hostfile"])
        return callback(*args, **kw)

    return run


def launch_options(default_np: str = "cores"):
    """--np, --hosts, --hostfile, --launcher, --bind, --blas-threads, --oversubscribe, --timeout, --net-if,
    --lost-after, --mpi, --vcluster."""

    def decorate(f):
        opts = [
            click.option("--np", "np", type=Count(1, MAX_RANKS), default=None,
                         help=f"MPI ranks (default: {default_np})."),
            click.option("--hosts", type=HOSTS, default=None, help="Hosts and slots, e.g. a:2,b:2 or 'node[01-04]:2'."),
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
            lost_after_option,
            mpi_option,
            click.option("--vcluster", metavar="NAME", default=None, expose_value=False, callback=use_vcluster,
                         help="Run on this virtual cluster: its launcher, and all its nodes unless --np, --hosts "
                              "or --hostfile narrow them (e.g. --hosts 'NAME-n[1-4]')."),
        ]
        if isinstance(f, click.Command):   # a command made whole (cli/family_command.py)
            f.callback = _on_named_cluster(f.callback)
        else:
            f = _on_named_cluster(f)
        for o in reversed(opts):
            f = o(f)
        return f

    return decorate
