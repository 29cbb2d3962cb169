"""Helpers for the rmax-hpl tests: find the executable, write HPL.dat files,
launch small MPI jobs with a timeout (a hang is a failure, never a stall)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def hpl_executable() -> str:
    try:
        sys.path.insert(0, str(ROOT / "src"))
        from rmax.native import executable

        return executable("rmax-hpl")
    except Exception:
        d = os.environ.get("RMAX_NATIVE_DIR")
        if d and os.access(Path(d) / "rmax-hpl", os.X_OK):
            return str(Path(d) / "rmax-hpl")
        found = shutil.which("rmax-hpl")
        if found:
            return found
        pytest.skip("rmax-hpl is not built (set RMAX_NATIVE_DIR)")


def dat(ns, nbs, P=1, Q=1, *, pfact=(2,), nbmin=(4,), ndiv=(2,), rfact=(1,), bcast=(1,), depth=(1,),
        swap=2, swapthr=64, l1=0, u=0, equil=1, align=8, pmap=0, thresh=16.0, device=6,
        outfile="HPL.out", grids=None) -> str:
    """The 31-line HPL.dat text for the given lists (written as given: bad values are the point of some tests)."""
    sys.path.insert(0, str(ROOT / "src"))
    from rmax.hpl.dat import HplConfig, render

    return render(HplConfig(ns=list(ns), nbs=list(nbs), pmap=pmap, grids=list(grids or [(P, Q)]), threshold=thresh,
                            pfacts=list(pfact), nbmins=list(nbmin), ndivs=list(ndiv), rfacts=list(rfact),
                            bcasts=list(bcast), depths=list(depth), swap=swap, swap_threshold=swapthr, l1_form=l1,
                            u_form=u, equilibration=equil, alignment=align, output_file=outfile, device=device),
                  title="rmax-hpl test input")


def run_hpl(cwd, np=1, args=(), timeout=120, env_extra=None, threads=None, mpi=None):
    """Runs rmax-hpl under mpirun in cwd; returns the CompletedProcess. threads: BLAS threads
    of each rank in turn (one application context per rank), else the environment's. mpi="mpich":
    MPICH's build of rmax-hpl under MPICH's mpiexec instead (docs/MPI.md)."""
    if mpi == "mpich":
        from rmax.native import executable

        env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", **(env_extra or {})}
        # as rmax's mpiexec launcher runs them: ranks sharing cores yield while they wait
        from rmax.launch.mpiexec import mpich_ranks

        env.update(mpich_ranks({"LD_PRELOAD": env.get("LD_PRELOAD", "")}, np > len(os.sched_getaffinity(0))))
        argv = [shutil.which("mpiexec.mpich") or "mpiexec.mpich", "-n", str(np), executable("rmax-hpl", mpi="mpich"),
                *args]
        return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    env = dict(os.environ)
    env.update({"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
                "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
                "OMPI_MCA_btl": "self,vader", "OMPI_MCA_rmaps_base_oversubscribe": "1",
                "OMPI_MCA_mpi_yield_when_idle": "1"})
    env.update(env_extra or {})
    argv = [shutil.which("mpirun") or "mpirun", "-np", str(np), hpl_executable(), *args]
    if threads:
        argv = [argv[0]]
        for i, t in enumerate(threads):
            argv += [*([":"] if i else []), "-np", "1", "-x", f"OMP_NUM_THREADS={t}", "-x",
                     f"OPENBLAS_NUM_THREADS={t}", hpl_executable(), *args]
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


# rmax-hpl started without mpirun (an MPI singleton: one rank) and kept to shared memory:
# ~20 ms a start instead of ~1 s for mpirun (more when a rank exits non-zero).
ALONE_ENV = {"OMPI_MCA_ess_singleton_isolated": "1", "OMPI_MCA_btl": "self", "OMPI_MCA_pml": "ob1",
             "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}


def run_alone(cwd, args=(), timeout=60):
    """Runs rmax-hpl as one rank without mpirun (ALONE_ENV) in cwd; returns the CompletedProcess."""
    return subprocess.run([hpl_executable(), *args], cwd=cwd, env={**os.environ, **ALONE_ENV}, capture_output=True,
                          text=True, timeout=timeout)


@pytest.fixture
def hpl_run():
    return run_hpl


@pytest.fixture
def hpl_dat():
    return dat
