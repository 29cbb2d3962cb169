"""MPICH's mpiexec (Hydra): the mpich build of rmax's MPI executables (or a site build of the MPICH
family: Intel MPI, MVAPICH2, with the site's own Hydra)."""

from __future__ import annotations

from rmax.launch.base import LaunchSpec, Launcher, register
from rmax.launch.hosts import host_argument
from rmax.launch.netscope import JobNetwork
from rmax.native import library

# Ranks that share cores yield the CPU after this many idle passes of MPICH's progress loop.
YIELD_AFTER = "10"


def mpich_ranks(env: dict[str, str], crowded: bool) -> dict[str, str]:
    """The environment of the mpich build's ranks with librmax-mpich.so added to the preloads
    (native/launch/mpich_ranks.c: MPICH 4.0's ch4 never yields the CPU by itself, and its finalize
    can hang across namespaces): they yield where they share cores."""
    preload = " ".join(filter(None, [env.get("LD_PRELOAD"), library("librmax-mpich.so")]))
    return {**env, "LD_PRELOAD": preload, **({"RMAX_YIELD_AFTER": YIELD_AFTER} if crowded else {})}


@register
class MpichExec(Launcher):
    name = "mpiexec"
    command = "mpiexec.mpich"
    package = "mpich"
    summary = "MPICH's mpiexec (Hydra)"
    mpi = "MPICH"

    def prefix(self, spec: LaunchSpec) -> list[str]:
        net = spec.network()
        env = {}
        if net.single_host or spec.net_if:
            # Debian's MPICH is ch4:ucx, whose TCP transport listens on every device's own
            # address unless told which (UCX_NET_DEVICES, UCX's manual); on several hosts
            # without --net-if UCX keeps its choice, which may be a faster fabric.
            env["UCX_NET_DEVICES"] = net.iface
        return self.confined(spec, net, env)

    def confined(self, spec: LaunchSpec, net: JobNetwork, env: dict[str, str], *, crowded: bool = False,
                 launcher: list[str] | None = None) -> list[str]:
        """Hydra's argv with its control port, its proxies and the ranks (they inherit the environment)
        on `net`: Hydra binds that port to 0.0.0.0 whatever -iface says, bindaddr keeps it there.
        `env` goes to every rank; `launcher`: Hydra's options that start the remote proxies."""
        env = {**net.bind_env(), **env}
        crowded = crowded or (spec.oversubscribe and spec.np * spec.blas_threads > spec.slots)
        argv = ["env", *(f"{k}={v}" for k, v in env.items()), self.path_for(spec, "mpiexec"), *(launcher or []),
                "-n", str(spec.np), "-iface", net.iface]
        if spec.hosts:   # the hosts rmax read: its hostfiles' 'host slots=N' lines are not Hydra's 'host:N'
            argv += ["-hosts", host_argument(spec.hosts)]
        if spec.ranks_per_node:
            argv += ["-ppn", str(spec.ranks_per_node)]
        # Ranks beyond the cores are left unbound (Hydra would stack them on the first cores), as
        # Open MPI's are, and yield the CPU while they wait (mpi_yield_when_idle's part).
        if spec.bind != "none" and not crowded:
            argv += ["-bind-to", f"{spec.bind}:{spec.blas_threads}" if spec.bind == "core" else spec.bind]
        ranks = {**spec.rank_env(), **env}
        if spec.mpi and spec.mpi.get("build") == "mpich":   # built against Debian's MPICH, as rmax's build is
            ranks = mpich_ranks(ranks, crowded)
        for k, v in ranks.items():
            argv += ["-genv", k, v]
        return argv
