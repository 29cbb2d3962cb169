"""Where the native executables (rmax-node, rmax-ranks, rmax-hpl, ...) are."""

import functools
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from rmax.errors import RmaxError

# The executables built once per MPI (native/mpi/builds.cmake): the first build under these names,
# every other one's with its name after a dot (rmax-net.mpich).
MPI_EXECUTABLES = ("rmax-ranks", "rmax-net", "rmax-hpl", "rmax-hpcc")
BUILD_PROBE = "rmax-ranks"     # `rmax-ranks[.NAME] --mpi-build` says which build it is


def library(name: str) -> str:
    """Absolute path of a native shared library (librmax-bindaddr.so), looked up as executables are."""
    return executable(name, runnable=False)


def executable(name: str, runnable: bool = True, mpi: str | None = None) -> str:
    """Absolute path of a native executable; of an MPI executable, `mpi` names the build (the
    first build's when None).

    Looked up in $RMAX_NATIVE_DIR (a development build), then beside the running
    Python (the virtual environment's bin/, where the install puts them), then on PATH.
    """
    if mpi is not None and name in MPI_EXECUTABLES:
        return mpi_build(mpi).executable(name)
    candidates = []
    if os.environ.get("RMAX_NATIVE_DIR"):
        candidates.append(Path(os.environ["RMAX_NATIVE_DIR"]) / name)
    candidates.append(Path(sys.executable).parent / name)
    for path in candidates:
        if path.is_file() and (not runnable or os.access(path, os.X_OK)):
            return str(path)
    found = shutil.which(name)
    if found:
        return found
    raise RmaxError(f"native executable {name} not found", hint="run 'make install' to build it")


@functools.lru_cache(maxsize=None)
def describe(name: str, command: str | None = None) -> dict[str, dict]:
    """The options of a native executable (or of its sub-command) as its own table declares them
    (`--describe`): {name: {"type", "min", "max", "default", "help", "unit", "choices"?}}, read
    once per process. A default of None is one the kernel computes at run time."""
    argv = [executable(name), *([command] if command else []), "--describe"]
    what = " ".join([name, *([command] if command else [])])
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise RmaxError(f"{what} could not describe its options: {e}") from None
    if done.returncode != 0:
        lines = [x for x in done.stderr.splitlines() if x.strip()]
        raise RmaxError(f"{what} --describe failed: {lines[-1] if lines else f'exit status {done.returncode}'}")
    try:
        return {o["name"]: o for o in json.loads(done.stdout)["options"]}
    except (ValueError, KeyError, TypeError) as e:
        raise RmaxError(f"{what} --describe printed no option table: {e}") from None


# MPI_Get_library_version's first line -> (implementation, version); the MPICH ABI's kin first.
LIBRARY_NAMES = ((r"Open MPI v(\S+?),", "Open MPI"), (r"Intel\(R\) MPI Library (\S+)", "Intel MPI"),
                 (r"CRAY MPICH version (\S+)", "Cray MPICH"), (r"MVAPICH2? Version\s*:\s*(\S+)", "MVAPICH2"),
                 (r"MPICH Version:\s*(\S+)", "MPICH"))


@dataclass(frozen=True)
class MpiBuild:
    """One build of the MPI executables: its name (openmpi, mpich, site, default), the suffix of its
    executables, the wrapper it was built with and the MPI library it loads."""

    name: str
    suffix: str
    folder: str
    wrapper: str
    library: str

    @property
    def implementation(self) -> str | None:
        return next((impl for pattern, impl in LIBRARY_NAMES if re.search(pattern, self.library)), None)

    @property
    def version(self) -> str | None:
        return next((m.group(1) for pattern, _ in LIBRARY_NAMES if (m := re.search(pattern, self.library))), None)

    @property
    def family(self) -> str:
        """Whose launcher starts its ranks: 'Open MPI', or 'MPICH' for MPICH and the MPIs that keep
        its ABI (Intel MPI, Cray MPICH, MVAPICH2), all started by a Hydra mpiexec or srun's PMI-2."""
        return "Open MPI" if self.implementation == "Open MPI" else "MPICH"

    def executable(self, name: str) -> str:
        path = Path(self.folder) / f"{name}{self.suffix}"
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise RmaxError(f"{path.name}, the {self.name} build of {name}, not found in {self.folder}",
                            hint="run 'make install' to build it")
        return str(path)

    def brief(self) -> dict:
        """What a run records of the MPI it ran under."""
        return {"build": self.name, "implementation": self.implementation, "version": self.version,
                "library": self.library, "wrapper": self.wrapper}


@functools.lru_cache(maxsize=None)
def mpi_builds() -> dict[str, MpiBuild]:
    """The MPI builds installed beside rmax-ranks, by name, the first build (plain names) first;
    each asked which it is (`--mpi-build`, no MPI started)."""
    try:
        first = Path(executable(BUILD_PROBE))
    except RmaxError:
        return {}
    found = {}
    for path in sorted(first.parent.glob(BUILD_PROBE + "*"), key=lambda p: (p != first, p.name)):
        suffix = path.name[len(BUILD_PROBE):]
        if (suffix and not re.fullmatch(r"\.[A-Za-z0-9_-]+", suffix)) or not os.access(path, os.X_OK):
            continue
        try:
            done = subprocess.run([str(path), "--mpi-build"], capture_output=True, text=True, timeout=30)
            info = json.loads(done.stdout) if done.returncode == 0 else None
        except (OSError, subprocess.TimeoutExpired, ValueError):
            info = None
        if not isinstance(info, dict) or info.get("schema") != "rmax.mpi_build/1":
            continue   # an older build, or one whose MPI library does not load
        found.setdefault(info["build"], MpiBuild(info["build"], suffix, str(path.parent), info.get("wrapper", ""),
                                                 info.get("library", "")))
    return found


def mpi_build(name: str | None = None) -> MpiBuild:
    """The named MPI build (the first one when None); one error line naming the builds there are."""
    builds = mpi_builds()
    if not builds:
        raise RmaxError(f"no build of rmax's MPI executables found ({BUILD_PROBE} --mpi-build answered nowhere)",
                        hint="run 'make install' to build them")
    if name is None:
        return next(iter(builds.values()))
    if name not in builds:
        raise RmaxError(f"no {name} build of rmax's MPI executables (builds here: {', '.join(builds)})",
                        hint=f"install {name}'s development package and run 'make install'; for a site MPI, "
                             "build with RMAX_MPICC=/path/to/mpicc (docs/MPI.md)")
    return builds[name]
