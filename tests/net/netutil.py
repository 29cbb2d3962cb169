"""Helpers for the network benchmark tests: running rmax-net directly under mpirun."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from rmax.native import executable, mpi_builds

# Tiny budgets: the tests check behaviour and fields, not performance.
FAST = ["--budget", "0.003", "--max-samples", "8"]

# A family's short case under MPICH's build and launcher (docs/MPI.md), where it adds coverage.
NO_MPICH = pytest.mark.skipif("mpich" not in mpi_builds(), reason="no MPICH build of rmax's MPI executables")
MPICH_TWO = pytest.param(["--np", "2", "--mpi", "mpich"], id="2-mpich", marks=NO_MPICH)


def mpirun(np_: int, *args: str, timeout: float = 120, cpus: int | None = None,
           mpi_args: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    """rmax-net under mpirun; cpus: run mpirun (and so the ranks) on that many CPUs only."""
    allowed = sorted(os.sched_getaffinity(0))
    argv = ["taskset", "-c", ",".join(map(str, allowed[:cpus]))] if cpus else []
    argv += ["mpirun", "-np", str(np_), *mpi_args]
    if os.geteuid() == 0:
        argv.append("--allow-run-as-root")
    if np_ > len(allowed[:cpus] if cpus else allowed):
        argv += ["--oversubscribe", "--mca", "mpi_yield_when_idle", "1"]
    argv += [executable("rmax-net"), *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)


def records(proc: subprocess.CompletedProcess) -> list[dict]:
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
