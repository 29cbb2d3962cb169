"""Which build of rmax's MPI executables a launcher runs.

The install builds rmax-ranks, rmax-net, rmax-hpl and rmax-hpcc once per MPI (native/mpi/builds.cmake:
Open MPI's under the plain names, MPICH's as rmax-net.mpich, a site wrapper's as rmax-net.site). A
launcher starts the ranks of one MPI: Open MPI's mpirun the openmpi build, MPICH's Hydra the mpich
one, srun whichever is chosen (its plugin follows the program: srun_mpi). RMAX_MPI (`--mpi NAME`)
chooses a build for every launch of the command; a launcher of another MPI is then refused."""

from __future__ import annotations

import functools
import os
import subprocess
from pathlib import Path

from rmax.errors import RmaxError
from rmax.native import MPI_EXECUTABLES, MpiBuild, executable, mpi_build, mpi_builds

MPI_VARIABLE = "RMAX_MPI"           # the build every launch of this process runs (`--mpi NAME`)
LAUNCHER_VARIABLE = "RMAX_MPIEXEC"  # the site build's launcher, when not the one beside its wrapper
# the build a launcher of each MPI runs when none is chosen
PREFERRED = {"Open MPI": "openmpi", "MPICH": "mpich"}


def chosen() -> str | None:
    return os.environ.get(MPI_VARIABLE) or None


def for_family(family: str | None, launcher: str) -> MpiBuild:
    """The build a launcher of `family` ('Open MPI', 'MPICH'; None: any) runs: the chosen one (refused
    when of another MPI), else its own (openmpi, mpich), else the first build of that MPI."""
    name = chosen()
    if name:
        build = mpi_build(name)
        if family and build.family != family:
            raise RmaxError(f"the {launcher} launcher starts {family} jobs, but {MPI_VARIABLE}={name} (--mpi) "
                            f"chooses the {name} build ({build.implementation or build.family})",
                            hint=f"leave out --launcher (the {name} build's launcher is chosen), or choose "
                                 "another --mpi")
        return build
    builds = mpi_builds()
    if family is None:
        return mpi_build()
    mine = builds.get(PREFERRED.get(family, ""))
    if mine and mine.family == family:
        return mine
    same = [b for b in builds.values() if b.family == family]
    if not same:
        raise RmaxError(f"no {family} build of rmax's MPI executables for the {launcher} launcher (builds here: "
                        f"{', '.join(f'{b.name} ({b.implementation})' for b in builds.values()) or 'none'})",
                        hint=f"install {family}'s development package (Debian: "
                             f"{'libmpich-dev' if family == 'MPICH' else 'libopenmpi-dev'}) and run 'make install'")
    return same[0]


def default_launcher() -> str:
    """The launcher outside Slurm: mpirun, or mpiexec when the chosen build is of the MPICH family."""
    name = chosen()
    return "mpiexec" if name and mpi_build(name).family == "MPICH" else "mpirun"


def launcher_command(build: MpiBuild, command: str, generic: str) -> str | None:
    """A site build's launcher: $RMAX_MPIEXEC, else `generic` (mpiexec, mpirun) beside its wrapper;
    None for Debian's builds, whose launchers are the classes' own commands."""
    if build.name != "site":
        return None
    given = os.environ.get(LAUNCHER_VARIABLE)
    if given:
        return given
    beside = Path(build.wrapper).parent / generic if build.wrapper else None
    return str(beside) if beside and beside.is_file() else generic


def ours(program: list[str]) -> str | None:
    """The name of rmax's own MPI executable that program runs (any build's: rmax-net.mpich is
    rmax-net), or None for another program."""
    if not program:
        return None
    base = os.path.basename(program[0])
    name = base.split(".", 1)[0]
    if name not in MPI_EXECUTABLES:
        return None
    try:
        mine = Path(executable(name))
    except RmaxError:
        return None
    if base != name and base[len(name):] not in {b.suffix for b in mpi_builds().values()}:
        return None
    return name if Path(program[0]).resolve().parent == mine.resolve().parent else None


def swap(program: list[str], build: MpiBuild) -> list[str]:
    """program with rmax's MPI executable replaced by that build's; a sub-command the build left out
    (its MPI lacks what it needs: fft, FFTW's MPI interface for it) is refused here, before a run."""
    name = ours(program)
    path = build.executable(name)
    if len(program) > 1 and not program[1].startswith("-") and name in ("rmax-net", "rmax-hpcc"):
        if program[1] not in commands(path):
            raise RmaxError(f"the {build.name} build of {name} ({os.path.basename(path)}) has no {program[1]}: "
                            f"the install leaves out what {build.implementation or build.name} lacks for it",
                            hint=f"run it under another MPI (--mpi {next(iter(mpi_builds()))}); docs/MPI.md says "
                                 "what each build needs")
    return [path, *program[1:]]


@functools.lru_cache(maxsize=None)
def commands(path: str) -> frozenset[str]:
    """The sub-commands an executable's --help lists (rmx_subcmd: "  NAME  summary" lines)."""
    try:
        done = subprocess.run([path, "--help"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise RmaxError(f"{path} --help failed: {e}") from None
    names = set()
    listing = False
    for line in (done.stdout + done.stderr).splitlines():
        if line.strip() == "commands:":
            listing = True
        elif listing and line.startswith("  ") and line.split():
            names.add(line.split()[0])
    return frozenset(names)
