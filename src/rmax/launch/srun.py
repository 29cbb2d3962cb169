"""Slurm's srun, inside an allocation (salloc or sbatch)."""

from __future__ import annotations

import os

from rmax.errors import RmaxError, RunFailed
from rmax.launch import srun_mpi
from rmax.launch.allocation import allocation_hosts
from rmax.launch.base import LaunchSpec, Launcher, register
from rmax.launch.hosts import Host, fill
from rmax.launch.netscope import job_network


def placement(spec: LaunchSpec) -> list[tuple[Host, int]]:
    """The hosts that get ranks and how many each, filling the hosts' slots in order as mpirun's
    by-slot mapping does (beyond them, with --oversubscribe, one more each in turn). srun puts the
    same number on every node it uses, so any other placement is refused."""
    used = [(h, c) for h, c in zip(spec.hosts, fill(spec.hosts, spec.np)) if c]
    if len({c for _, c in used}) > 1:
        asked = ", ".join(f"{h.name}:{c}" for h, c in used)
        raise RmaxError(f"srun puts the same number of ranks on every node it uses, not {asked}",
                        hint="give every host the same slot count (e.g. --hosts a:2,b:2), or use --launcher mpirun")
    have = {h.name: h.slots for h in allocation_hosts() or []}
    short = [(h.name, c, have[h.name]) for h, c in used if h.name in have and c > have[h.name]]
    if short and not spec.oversubscribe:
        name, c, n = short[0]
        raise RmaxError(f"{c} ranks on {name}, but the allocation has {n} task slot{'s' if n != 1 else ''} there",
                        hint="ask Slurm for more (salloc --ntasks-per-node), or spread the ranks over more nodes")
    return used


@register
class SlurmRun(Launcher):
    name = "srun"
    command = "srun"
    package = "slurm-client"
    summary = "Slurm's srun (default inside an allocation)"
    probe_args = ["--overlap"]   # launch/reach.py: asking a node beside a step that holds its CPUs (Slurm >= 20.11)

    def prefix(self, spec: LaunchSpec) -> list[str]:
        if not os.environ.get("SLURM_JOB_ID"):
            raise RmaxError("the srun launcher runs inside a Slurm allocation, and there is none",
                            hint="use salloc or sbatch (see 'rmax slurm script'), or --launcher mpirun")
        # --overlap: rmax's steps run one after another, but Slurm holds the last one's CPUs until its
        # processes are gone, and a new step waits for them (srun: "step creation temporarily disabled")
        # without a word until it starts: on 64 virtual nodes the step after a 64-rank one did not
        # start within the 60 s start deadline
        argv = [self.path(), "--overlap", "--ntasks", str(spec.np), f"--cpus-per-task={spec.blas_threads}"]
        plugin, _ = srun_mpi.choose(argv[0], spec.program, os.environ)
        if plugin:
            argv.append(f"--mpi={plugin}")
        # --nodelist alone is a minimum set: srun adds the allocation's other nodes and spreads the
        # ranks its own way, so the nodes and the ranks on each are given exactly
        if spec.hosts and spec.ranks_per_node:
            nodes = spec.hosts[:-(-spec.np // spec.ranks_per_node)]
            argv += ["--nodes", str(len(nodes)), "--nodelist", ",".join(h.name for h in nodes)]
        elif spec.hosts:
            used = placement(spec)
            argv += ["--nodes", str(len(used)), "--nodelist", ",".join(h.name for h, _ in used),
                     "--ntasks-per-node", str(used[0][1])]
        if spec.ranks_per_node:
            argv += ["--ntasks-per-node", str(spec.ranks_per_node)]
        if spec.oversubscribe:
            argv.append("--overcommit")
        argv.append("--cpu-bind=" + {"core": "cores", "socket": "sockets", "none": "none"}[spec.bind])
        # the ranks' listeners confined to the job's network as under mpirun (netscope); srun and
        # slurmstepd are Slurm's own and keep theirs. --export splits on commas: the networks
        # go space-separated, which bindaddr reads too.
        net = job_network([h.name for h in (spec.hosts or allocation_hosts() or [])], spec.net_if)
        bind = {k: v.replace(",", " ") for k, v in net.bind_env().items()}
        env = ",".join(f"{k}={v}" for k, v in {**spec.rank_env(), **bind}.items())
        argv.append(f"--export=ALL,{env}")
        return argv

    def available(self) -> bool:
        return super().available() and bool(os.environ.get("SLURM_JOB_ID"))

    def detail(self) -> str:
        """The MPI plugin srun would use for rmax's kernels."""
        if not super().available():
            return ""
        try:
            plugins = srun_mpi.available(self.path())
            plugin, why = srun_mpi.choose(self.path(), [self.build().executable("rmax-ranks")], os.environ)
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
