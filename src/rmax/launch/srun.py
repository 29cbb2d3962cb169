"""Slurm's srun, inside an allocation (salloc or sbatch)."""

from __future__ import annotations

import os

from rmax.errors import RmaxError
from rmax.launch.base import LaunchSpec, Launcher, register


@register
class SlurmRun(Launcher):
    name = "srun"
    command = "srun"
    package = "slurm-client"
    summary = "Slurm's srun (default inside an allocation)"

    def prefix(self, spec: LaunchSpec) -> list[str]:
        if not os.environ.get("SLURM_JOB_ID"):
            raise RmaxError("the srun launcher runs inside a Slurm allocation, and there is none",
                            hint="use salloc or sbatch (see 'rmax slurm script'), or --launcher mpirun")
        argv = [self.path(), "--ntasks", str(spec.np), f"--cpus-per-task={spec.blas_threads}"]
        if spec.hosts:
            argv += ["--nodelist", ",".join(h.name for h in spec.hosts)]
        if spec.ranks_per_node:
            argv += ["--ntasks-per-node", str(spec.ranks_per_node)]
        if spec.oversubscribe:
            argv.append("--overcommit")
        argv.append("--cpu-bind=" + {"core": "cores", "socket": "sockets", "none": "none"}[spec.bind])
        env = ",".join(f"{k}={v}" for k, v in spec.rank_env().items())
        argv.append(f"--export=ALL,{env}")
        return argv

    def available(self) -> bool:
        return super().available() and bool(os.environ.get("SLURM_JOB_ID"))
