"""MPICH's mpiexec (Hydra)."""

from __future__ import annotations

from rmax.launch.base import LaunchSpec, Launcher, register


@register
class MpichExec(Launcher):
    name = "mpiexec"
    command = "mpiexec.mpich"
    package = "mpich"
    summary = "MPICH's mpiexec (Hydra)"

    def prefix(self, spec: LaunchSpec) -> list[str]:
        argv = [self.path(), "-n", str(spec.np)]
        if spec.hostfile:
            argv += ["-f", spec.hostfile]
        elif spec.hosts:
            argv += ["-hosts", ",".join(f"{h.name}:{h.slots}" for h in spec.hosts)]
        if spec.ranks_per_node:
            argv += ["-ppn", str(spec.ranks_per_node)]
        if spec.bind != "none":
            argv += ["-bind-to", f"{spec.bind}:{spec.blas_threads}" if spec.bind == "core" else spec.bind]
        for k, v in spec.rank_env().items():
            argv += ["-genv", k, v]
        return argv
