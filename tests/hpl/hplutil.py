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
    """The 31-line HPL.dat text for the given lists."""
    grids = grids or [(P, Q)]

    def row(v):
        return " ".join(str(x) for x in v)

    return "\n".join([
        "rmax-hpl test input",
        "written by tests/hpl",
        f"{outfile}      output file name (if any)",
        f"{device}            device out (6=stdout,7=stderr,file)",
        f"{len(ns)}            # of problems sizes (N)",
        f"{row(ns)}         Ns",
        f"{len(nbs)}            # of NBs",
        f"{row(nbs)}          NBs",
        f"{pmap}            PMAP process mapping (0=Row-,1=Column-major)",
        f"{len(grids)}            # of process grids (P x Q)",
        f"{row(g[0] for g in grids)}            Ps",
        f"{row(g[1] for g in grids)}            Qs",
        f"{thresh}         threshold",
        f"{len(pfact)}            # of panel fact",
        f"{row(pfact)}        PFACTs (0=left, 1=Crout, 2=Right)",
        f"{len(nbmin)}            # of recursive stopping criterium",
        f"{row(nbmin)}            NBMINs (>= 1)",
        f"{len(ndiv)}            # of panels in recursion",
        f"{row(ndiv)}            NDIVs",
        f"{len(rfact)}            # of recursive panel fact.",
        f"{row(rfact)}            RFACTs (0=left, 1=Crout, 2=Right)",
        f"{len(bcast)}            # of broadcast",
        f"{row(bcast)}        BCASTs (0=1rg,1=1rM,2=2rg,3=2rM,4=Lng,5=LnM)",
        f"{len(depth)}            # of lookahead depth",
        f"{row(depth)}            DEPTHs (>=0)",
        f"{swap}            SWAP (0=bin-exch,1=long,2=mix)",
        f"{swapthr}           swapping threshold",
        f"{l1}            L1 in (0=transposed,1=no-transposed) form",
        f"{u}            U  in (0=transposed,1=no-transposed) form",
        f"{equil}            Equilibration (0=no,1=yes)",
        f"{align}            memory alignment in double (> 0)",
    ]) + "\n"


def run_hpl(cwd, np=1, args=(), timeout=120, env_extra=None):
    """Runs rmax-hpl under mpirun in cwd; returns the CompletedProcess."""
    env = dict(os.environ)
    env.update({"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
                "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
                "OMPI_MCA_btl": "self,vader", "OMPI_MCA_rmaps_base_oversubscribe": "1",
                "OMPI_MCA_mpi_yield_when_idle": "1"})
    env.update(env_extra or {})
    argv = [shutil.which("mpirun") or "mpirun", "-np", str(np), hpl_executable(), *args]
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def hpl_run():
    return run_hpl


@pytest.fixture
def hpl_dat():
    return dat
