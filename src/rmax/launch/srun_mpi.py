"""Which MPI plugin srun starts a program with.

A Slurm that keeps its default `MpiDefault=none` gives ranks no process-management
interface, and an Open MPI rank then dies in MPI_Init ("OPAL ERROR: Unreachable in
file ext3x_client.c"). The plugin has to match the MPI library the program is linked
with: Open MPI 4 talks PMIx (Debian's Open MPI is built without Slurm's PMI-2),
MPICH talks PMI-2 (MPICH's README, "srun --mpi=pmi2"). srun --mpi=list says which
plugins this Slurm has. SLURM_MPI_TYPE, srun's own variable, overrides the choice."""

from __future__ import annotations

import functools
import re
import shutil
import subprocess

from rmax.errors import RmaxError

# soname of the MPI library -> the MPI; the first match in `ldd` output wins.
LIBRARIES = (("libmpi.so.40", "Open MPI"), ("libmpich.so", "MPICH"), ("libmpi.so.12", "MPICH"))
# plugins in order of preference for each MPI (srun --mpi=list names)
PREFERENCE = {"Open MPI": ("pmix", "pmix_v5", "pmix_v4", "pmix_v3", "pmix_v2"), "MPICH": ("pmi2", "pmix")}
OVERRIDE = "SLURM_MPI_TYPE"
# What a rank prints when its MPI found no (or the wrong) process-management interface.
PMI_FAILURES = ("OPAL ERROR: Unreachable", "not built with SLURM's PMI support", "PMI2_Init", "PMIx_Init",
                "PMI_Init", "pmixp_", "before MPI_INIT completed", "Invalid MPI type", "MPI: Unable to load")


@functools.lru_cache(maxsize=None)
def linked_mpi(program: str) -> str | None:
    """'Open MPI', 'MPICH' or None (not an MPI program, or not an ELF executable)."""
    path = shutil.which(program) or program
    try:
        out = subprocess.run(["ldd", path], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    for soname, mpi in LIBRARIES:
        if soname in out.stdout:
            return mpi
    return None


@functools.lru_cache(maxsize=None)
def available(srun: str) -> tuple[str, ...]:
    """The plugins `srun --mpi=list` names, versioned pmix ones included."""
    try:
        out = subprocess.run([srun, "--mpi=list"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise RmaxError(f"srun --mpi=list failed: {e}", hint="check the Slurm installation") from None
    if out.returncode != 0:
        msg = (out.stderr.strip().splitlines() or ["no message"])[-1]
        raise RmaxError(f"srun --mpi=list failed: {msg}", hint="check SLURM_CONF and the Slurm installation")
    names = []
    for line in (out.stdout + out.stderr).splitlines():
        if line[:1].isspace() and line.strip():
            names.append(line.strip())
        elif m := re.match(r"specific pmix plugin versions available:\s*(.*)", line.strip()):
            names += [v for v in re.split(r"[,\s]+", m.group(1)) if v]
    return tuple(names)


def choose(srun: str, program: list[str], env: dict[str, str]) -> tuple[str | None, str]:
    """(plugin or None to leave srun's default, why) for a program."""
    wanted = env.get(OVERRIDE)
    mpi = linked_mpi(program[0]) if program else None
    if not wanted and mpi is None:
        return None, "not an MPI program"
    plugins = available(srun)
    if wanted:
        if wanted not in plugins:
            raise RmaxError(f"{OVERRIDE}={wanted} is not an MPI plugin of this Slurm",
                            hint="srun --mpi=list offers: " + ", ".join(plugins))
        return wanted, f"set by {OVERRIDE}"
    for p in PREFERENCE[mpi]:
        if p in plugins:
            return p, f"matches {mpi}"
    raise RmaxError(f"this Slurm has no MPI plugin for {mpi}: srun --mpi=list offers " + ", ".join(plugins),
                    hint=f"install Slurm's {PREFERENCE[mpi][0]} plugin (Debian: slurm-wlm-basic-plugins), or "
                    f"set {OVERRIDE}")


def pmi_failure(text: str) -> bool:
    return any(p in text for p in PMI_FAILURES)
