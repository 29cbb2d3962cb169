"""Every combination of PFACT x RFACT x NBMIN x BCAST x DEPTH, for each SWAP x
L1 x U, on the grids 1x1 1x2 2x1 2x2 1x3 3x1, over small N (1, below NB, not
a multiple of NB, prime): all must pass the residual check. One HPL.dat per
(SWAP, L1, U) and rank count carries all the other combinations as lists, the
grids of that many ranks included (one launch runs 1x2 and 2x1); 1x1 runs as
one rank without mpirun (hplutil.run_alone)."""

import functools
import itertools
import re

import pytest

from hplutil import run_alone
from rmax.native import mpi_builds

GRIDS = [((1, 1),), ((1, 2), (2, 1)), ((2, 2),), ((1, 3), (3, 1))]   # the grids of one launch each
TRIPLES = list(itertools.product((0, 1, 2), (0, 1), (0, 1)))  # SWAP, L1, U
NS = (1, 3, 13, 29)        # 1, below NB, not a multiple of NB, prime
NB = 4
PFACT = RFACT = (0, 1, 2)
NBMIN = (1, 2)
BCAST = (0, 1, 2, 3, 4, 5)
DEPTH = (0, 1, 2)

RESULT = re.compile(r"^(W[RC]\d+[LCR]\d+[LCR]\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.eE+-]+)$")
RESID = re.compile(r"^\|\|Ax-b\|\|_oo/\(eps\*\(\|\|A\|\|_oo\*\|\|x\|\|_oo\+\|\|b\|\|_oo\)\*N\)=\s+(\S+) \.\.\.\.\.\. (PASSED|FAILED)$")


@pytest.mark.parametrize("grids", GRIDS, ids=lambda gs: "+".join(f"{p}x{q}" for p, q in gs))
@pytest.mark.parametrize("triple", TRIPLES, ids=lambda t: f"swap{t[0]}-l1{t[1]}-u{t[2]}")
def test_all_combinations_pass(tmp_path, hpl_run, hpl_dat, grids, triple):
    all_pass(tmp_path, hpl_run, hpl_dat, grids, triple)


@pytest.mark.skipif("mpich" not in mpi_builds(), reason="no MPICH build of rmax's MPI executables")
@pytest.mark.parametrize("grids, triple", [(GRIDS[1], (0, 0, 0)), (GRIDS[1], (2, 0, 1)), (GRIDS[2], (1, 1, 0))],
                         ids=["1x2+2x1-swap0", "1x2+2x1-swap2", "2x2-swap1"])
def test_all_combinations_pass_under_mpich(tmp_path, hpl_run, hpl_dat, grids, triple):
    """The same suite through MPICH's build of rmax-hpl and MPICH's mpiexec: each row-swap algorithm
    once, on grids with two process rows and two columns (every broadcast, factorisation and depth in
    each file); the 2 x 2 grid's four ranks share two cores, yielding (librmax-yield.so)."""
    all_pass(tmp_path, functools.partial(hpl_run, mpi="mpich"), hpl_dat, grids, triple)


def all_pass(tmp_path, hpl_run, hpl_dat, grids, triple):
    ranks = grids[0][0] * grids[0][1]
    swap, l1, u = triple
    # NDIV alternates between files so both 2 and 3 pieces are exercised on every grid.
    ndiv = (2,) if (swap + l1 + u) % 2 == 0 else (3,)
    # Mix with a threshold inside the range of trailing widths uses both algorithms.
    (tmp_path / "HPL.dat").write_text(hpl_dat(NS, (NB,), pfact=PFACT, nbmin=NBMIN, ndiv=ndiv, rfact=RFACT,
                                              bcast=BCAST, depth=DEPTH, swap=swap, swapthr=8, l1=l1, u=u,
                                              equil=(swap + l1) % 2, grids=grids))
    r = run_alone(tmp_path, timeout=120) if ranks == 1 else hpl_run(tmp_path, np=ranks)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    results = [m for m in map(RESULT.match, lines) if m]
    resid = [m for m in map(RESID.match, lines) if m]
    per_grid = len(NS) * len(PFACT) * len(RFACT) * len(NBMIN) * len(BCAST) * len(DEPTH)
    expected = len(grids) * per_grid
    assert [(int(m[4]), int(m[5])) for m in results] == [g for g in grids for _ in range(per_grid)]
    assert len(results) == expected
    assert len(resid) == expected
    failed = [lines[i - 2] for i, l in enumerate(lines) if l.endswith("FAILED")]
    assert not failed, failed[:5]
    assert f"{expected:6d} tests completed and passed residual checks," in r.stdout
