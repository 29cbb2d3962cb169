"""Slurm's srun, inside an allocation (salloc or sbatch)."""

from __future__ import annotations

import os

from rmax.errors import RmaxError, RunFailed
from rmax.launch import srun_mpi
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
        plugin, _ = srun_mpi.choose(argv[0], spec.program, os.environ)
        if plugin:
            argv.append(f"--mpi={plugin}")
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

    def detail(self) -> str:
        """The MPI plugin srun would use for rmax's kernels."""
        from rmax.native import executable

        if not super().available():
            return ""
        try:
            plugins = srun_mpi.available(self.path())
            plugin, why = srun_mpi.choose(self.path(), [executable("rmax-ranks")], os.environ)
        except RmaxError as e:
            return f"MPI plugin unknown ({e.message})"
        return f"MPI plugin {plugin or 'default'} ({why}; srun --mpi=list: {', '.join(plugins)})"

    @classmethod
    def diagnose(cls, what: str, argv: list[str], text: str) -> RunFailed | None:
        if not argv or os.path.basename(argv[0]) != cls.command or not srun_mpi.pmi_failure(text):
            return None
        plugin = next((a.split("=", 1)[1] for a in argv if a.startswith("--mpi=")), None)
        used = f"srun --mpi={plugin}" if plugin else "srun with Slurm's MpiDefault (no --mpi)"
        try:
            offered = "this Slurm offers " + ", ".join(srun_mpi.available(argv[0]))
        except RmaxError:
            offered = "srun --mpi=list names them"
        return RunFailed(f"{what} failed in MPI startup: the ranks found no process-management interface "
                         f"they speak under {used}",
                         hint=f"choose another plugin with {srun_mpi.OVERRIDE}=NAME ({offered})")
