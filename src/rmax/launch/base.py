"""The launch interface: turn "run this executable on these ranks and hosts"
into an argv. A launcher is one small class registered by name; its only job
is the argv prefix (ReFrame's pattern), so adding one is adding one class."""

from __future__ import annotations

import os
import shutil
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import ClassVar

from rmax.errors import RmaxError, RunFailed
from rmax.launch.hosts import Host, fill, hostfile_hosts, local_slots
from rmax.registry import Registry

WATCHDOG_ENV = {"RMAX_STEPS": "1"}   # turns on the kernels' step markers, heartbeat and parent-death signal

# Every BLAS/OpenMP thread variable is set explicitly for each rank: an unset
# one lets OpenBLAS start a thread per core in every rank and oversubscribe.
THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "BLIS_NUM_THREADS", "MKL_NUM_THREADS")
BINDINGS = ("core", "socket", "none")
MAX_RANKS = 1 << 20          # beyond the largest machines' rank counts
OVERSUBSCRIBED = 32          # ranks per known slot, and per CPU of this host, at most, even with --oversubscribe


@dataclass
class LaunchSpec:
    """What to run: the program's argv and where its ranks go."""

    program: list[str]
    np: int = 1
    hosts: list[Host] | None = None       # None: this host only
    hostfile: str | None = None           # where hosts came from; given as is to the launcher if it may be
    ranks_per_node: int | None = None
    bind: str = "core"
    blas_threads: int = 1
    env: dict[str, str] = field(default_factory=dict)   # extra variables for every rank
    oversubscribe: bool = False
    extra_args: list[str] = field(default_factory=list)  # launcher-specific, e.g. from the virtual cluster
    blas_kernels: bool = True             # let rmax choose the BLAS's widest kernels (rmax.blas.kernel_env)
    net_if: str | None = None             # the interface MPI uses between hosts (default: the route's)
    launcher: str | None = None           # the launcher it was prepared for (job.prepare): a silent host is asked through it
    mpi: dict | None = None               # the MPI its ranks run under (Launcher.argv), recorded with the run

    @property
    def slots(self) -> int:
        return sum(h.slots for h in self.hosts) if self.hosts else local_slots()

    def hostfile_as_is(self) -> str | None:
        """The hostfile, when the launcher may read it itself: not one in Slurm's hostlist syntax or
        naming a host twice, which Open MPI refuses ("internal error in ORTE" for 10,000 lines of
        one host); the launcher is then given the hosts rmax read from it."""
        return self.hostfile if self.hostfile and hostfile_hosts(self.hostfile)[1] else None

    def network(self):
        """The network the job may listen on (rmax.launch.netscope)."""
        from rmax.launch.netscope import job_network

        return job_network([h.name for h in self.hosts] if self.hosts else None, self.net_if)

    def rank_env(self) -> dict[str, str]:
        env = {v: str(self.blas_threads) for v in THREAD_VARIABLES}
        env.update(WATCHDOG_ENV)   # ranks on other hosts too announce their steps and heartbeats
        env.update(self.env)
        if self.blas_kernels:
            from rmax.blas import kernel_env

            env.update(kernel_env(env))
        return env

    def validate(self) -> None:
        if self.np < 1:
            raise RmaxError(f"--np must be at least 1, not {self.np}")
        if self.bind not in BINDINGS:
            raise RmaxError(f"binding '{self.bind}' is not one of {', '.join(BINDINGS)}")
        if self.blas_threads < 1:
            raise RmaxError(f"BLAS threads must be at least 1, not {self.blas_threads}")
        if self.ranks_per_node is not None and self.ranks_per_node < 1:
            raise RmaxError(f"ranks per node must be at least 1, not {self.ranks_per_node}")
        if self.np > MAX_RANKS:
            raise RmaxError(f"--np {self.np} is beyond the {MAX_RANKS} ranks rmax launches")
        if self.oversubscribe and self.np > OVERSUBSCRIBED * self.slots:
            # mpirun would try to start them all and hang until the watchdog (seen with --np 100000).
            raise RmaxError(f"{self.np} ranks on {self.slots} slots is more than {OVERSUBSCRIBED} per slot, "
                            "even with --oversubscribe", hint="use fewer ranks, or add hosts")
        if not self.oversubscribe and self.np > self.slots:
            where = (", ".join(f"{h.name}:{h.slots}" for h in self.hosts[:8]) + (f", ... {len(self.hosts)} hosts"
                     if len(self.hosts) > 8 else "")) if self.hosts else f"this host has {self.slots}"
            raise RmaxError(f"{self.np} ranks requested but only {self.slots} slots ({where})",
                            hint="use fewer ranks, add hosts, or pass --oversubscribe")
        self._check_this_host()
        if not self.oversubscribe and self.bind == "core" and self.np * self.blas_threads > self.slots:
            # each rank is bound to as many cores as it has BLAS threads: mpirun would refuse the mapping
            raise RmaxError(f"{self.np} ranks x {self.blas_threads} BLAS threads need {self.np * self.blas_threads} "
                            f"cores bound, but only {self.slots} slots",
                            hint="use fewer ranks or threads, --bind none, or pass --oversubscribe")

    def ranks_on_this_host(self) -> int:
        """The ranks mpirun's by-slot mapping puts on this host (all of them without a host list)."""
        if not self.hosts:
            return self.np
        from rmax.launch.netscope import is_local

        return sum(c for h, c in zip(self.hosts, fill(self.hosts, self.np)) if c and is_local(h.name))

    def _check_this_host(self) -> None:
        """The ranks that land on this host against its CPUs, whatever slots the host list gives it
        (`--hosts localhost:65536`, or a hostfile naming it on 10,000 lines): beyond them only with
        --oversubscribe, and never beyond OVERSUBSCRIBED per CPU, where mpirun would try to start
        them all and fail far from the cause."""
        cpus = local_slots()
        most = OVERSUBSCRIBED * cpus if self.oversubscribe else cpus
        if not self.hosts or self.np <= most:
            return   # without hosts the checks above counted this host's CPUs
        ranks = self.ranks_on_this_host()
        if ranks <= most:
            return
        from rmax.launch.netscope import is_local

        here = [h for h in self.hosts if is_local(h.name)]
        given = ", ".join(f"{h.name} with {h.slots} slots" for h in here)
        if self.oversubscribe:
            raise RmaxError(f"{ranks} ranks on this host ({given}) is more than {OVERSUBSCRIBED} per CPU of its "
                            f"{cpus}, even with --oversubscribe", hint="use fewer ranks, or add hosts")
        raise RmaxError(f"{ranks} ranks on this host ({given}) but it has {cpus} CPUs",
                        hint="use fewer ranks or slots (a host named more than once gets the sum of its slots), "
                             "or pass --oversubscribe")


class Launcher(ABC):
    name: ClassVar[str]
    command: ClassVar[str]        # the executable looked up on PATH
    package: ClassVar[str]        # the Debian package that provides it
    summary: ClassVar[str]
    mpi: ClassVar[str | None] = None   # the MPI whose programs it starts as one job (None: any, or none)

    def path(self) -> str:
        found = shutil.which(self.command)
        if not found:
            raise RmaxError(f"{self.command} not found: the {self.name} launcher needs it",
                            hint=f"apt-get install {self.package}")
        return found

    def path_for(self, spec: LaunchSpec, generic: str) -> str:
        """The launcher's executable for spec: a site build's own (its `generic` launcher, mpiexec or
        mpirun, beside the wrapper it was built with, or $RMAX_MPIEXEC), else the class's command."""
        if spec.mpi and spec.mpi.get("build") == "site":
            from rmax.launch.builds import LAUNCHER_VARIABLE, launcher_command
            from rmax.native import mpi_build

            command = launcher_command(mpi_build("site"), self.command, generic)
            found = shutil.which(command) if command else None
            if not found:
                raise RmaxError(f"{command}, the site MPI's launcher, not found",
                                hint=f"name it with {LAUNCHER_VARIABLE}=/path/to/{generic}")
            return found
        return self.path()

    def family(self) -> str | None:
        """The MPI whose jobs this launcher starts now (the class's `mpi` unless it depends on the build)."""
        return self.mpi

    def build(self):
        """The build of rmax's MPI executables this launcher runs (rmax.launch.builds)."""
        from rmax.launch.builds import for_family

        return for_family(self.family(), self.name)

    def use_build(self, spec: LaunchSpec) -> None:
        """rmax's own MPI executable in spec.program replaced by the build this launcher runs, and the
        MPI recorded in spec.mpi (a foreign program: the MPI it is linked with, when one)."""
        from rmax.launch import builds
        from rmax.launch.srun_mpi import linked_mpi

        if builds.ours(spec.program):
            build = self.build()
            spec.program = builds.swap(spec.program, build)
            spec.mpi = build.brief()
        elif spec.program and (linked := linked_mpi(spec.program[0])):
            spec.mpi = {"build": None, "implementation": linked, "version": None}

    def available(self) -> bool:
        return shutil.which(self.command) is not None

    def detail(self) -> str:
        """More about how it would launch here (shown by `rmax launch launchers`)."""
        return ""

    @classmethod
    def diagnose(cls, what: str, argv: list[str], text: str) -> RunFailed | None:
        """A specific error for a job of this launcher that failed with stderr `text`, or None."""
        return None

    def check_program(self, program: list[str]) -> None:
        """Refuse a program built with another MPI: this launcher would start each of its ranks
        as a job of one (each rank 0 of 1), and the run would fail far from the cause."""
        from rmax.launch.srun_mpi import linked_mpi

        family = self.family()
        built = linked_mpi(program[0]) if family and program else None
        if built and built != family:
            other = next((c.name for c in REGISTRY.values() if c.mpi == built), None)
            raise RmaxError(f"{program[0]} is built with {built}, but the {self.name} launcher starts {family} jobs",
                            hint=f"use --launcher {other}" if other else f"launch it with {built}'s own launcher")

    @abstractmethod
    def prefix(self, spec: LaunchSpec) -> list[str]:
        """The launcher's argv up to (not including) the program."""

    def argv(self, spec: LaunchSpec) -> list[str]:
        spec.validate()
        self.use_build(spec)
        self.check_program(spec.program)
        return [*_unique_mca([*self.prefix(spec), *spec.extra_args]), *spec.program]


def _unique_mca(args: list[str]) -> list[str]:
    """Drop repeated `--mca NAME VALUE` settings (Open MPI refuses a parameter given twice);
    the first one given wins, so a launcher's own settings come before a benchmark's."""
    out, seen, i = [], set(), 0
    while i < len(args):
        if args[i] == "--mca" and i + 2 < len(args):
            name = args[i + 1]
            if name not in seen:
                seen.add(name)
                out += args[i:i + 3]
            i += 3
            continue
        out.append(args[i])
        i += 1
    return out


REGISTRY: Registry = Registry("launchers")     # name -> Launcher class
register = REGISTRY.register


def diagnose(what: str, argv: list[str], text: str) -> RunFailed | None:
    """The first launcher that recognises this failure, if any."""
    for cls in REGISTRY.values():
        found = cls.diagnose(what, argv, text)
        if found:
            return found
    return None


def get_launcher(name: str | None = None) -> Launcher:
    """The named launcher, or the default: srun inside a Slurm allocation, else mpirun (mpiexec when
    --mpi chose an MPICH-family build)."""
    if name is None:
        from rmax.launch.builds import default_launcher

        name = "srun" if os.environ.get("SLURM_JOB_ID") else default_launcher()
    if name not in REGISTRY:
        raise RmaxError(f"unknown launcher '{name}'", hint=f"one of: {', '.join(sorted(REGISTRY))}")
    return REGISTRY[name]()
