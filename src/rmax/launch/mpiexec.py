"""MPICH's mpiexec (Hydra)."""

from __future__ import annotations

from rmax.launch.base import LaunchSpec, Launcher, register
from rmax.launch.hosts import host_argument


@register
class MpichExec(Launcher):
    name = "mpiexec"
    command = "mpiexec.mpich"
    package = "mpich"
    summary = "MPICH's mpiexec (Hydra)"
    mpi = "MPICH"

    def prefix(self, spec: LaunchSpec) -> list[str]:
        net = spec.network()
        # Hydra binds its control port to 0.0.0.0 whatever -iface says: bindaddr keeps
        # it, the proxies and the ranks (they inherit the environment) on the job's network.
        env = net.bind_env()
        if net.single_host or spec.net_if:
            # Debian's MPICH is ch4:ucx, whose TCP transport listens on every device's own
            # address unless told which (UCX_NET_DEVICES, UCX's manual); on several hosts
            # without --net-if UCX keeps its choice, which may be a faster fabric.
            env["UCX_NET_DEVICES"] = net.iface
        argv = ["env", *(f"{k}={v}" for k, v in env.items()), self.path(), "-n", str(spec.np), "-iface", net.iface]
        if spec.hostfile_as_is():
            argv += ["-f", spec.hostfile]
        elif spec.hosts:
            argv += ["-hosts", host_argument(spec.hosts)]
        if spec.ranks_per_node:
            argv += ["-ppn", str(spec.ranks_per_node)]
        if spec.bind != "none":
            argv += ["-bind-to", f"{spec.bind}:{spec.blas_threads}" if spec.bind == "core" else spec.bind]
        for k, v in spec.rank_env().items():
            argv += ["-genv", k, v]
        return argv
