"""Large NB on grids with P > 1: the per-column pivot record (2 NB + 4 doubles)
is reduced over the process column with a user-defined MPI operation. MPI may
hand such an operation any split of a vector of basic elements (Open MPI
halves the vector between two processes once it is a few KB, i.e. NB >= ~128),
which cut records in two and made 2x1 with NB=256 segfault at N=520, 1024,
5632. The record now travels as one element of a derived datatype.

These runs use the sizes that crashed, NB larger than N / P or than N, NB not
dividing N, on 2x1, 2x2, 3x1 and 4x1, each with all three SWAP variants."""

import pytest

CASES = [
    # (P, Q, Ns, NBs): a few N around the failing ones, quick enough for every run.
    (2, 1, (520, 1024, 600, 700, 257), (256,)),
    (2, 1, (100, 300, 513), (192, 384, 512)),
    (2, 2, (520, 1024, 130), (256, 512)),
    (3, 1, (520, 700, 64), (128, 256)),
    (4, 1, (300, 1030), (64, 256)),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}x{c[1]}-nb{'-'.join(map(str, c[3]))}")
@pytest.mark.parametrize("swap", (0, 1, 2), ids=("binexch", "long", "mix"))
def test_large_nb_passes(tmp_path, hpl_run, hpl_dat, case, swap):
    P, Q, ns, nbs = case
    (tmp_path / "HPL.dat").write_text(hpl_dat(ns, nbs, P, Q, pfact=(1, 2), rfact=(1,), depth=(0, 1),
                                              bcast=(1,), swap=swap, swapthr=100, equil=swap % 2))
    r = hpl_run(tmp_path, np=P * Q, timeout=300)
    assert r.returncode == 0, (r.stdout[-2000:], r.stderr[-2000:])
    expected = len(ns) * len(nbs) * 2 * 2
    verdicts = [line.rsplit(" ", 1)[-1] for line in r.stdout.splitlines() if line.startswith("||Ax-b||")]
    assert len(verdicts) == expected, r.stdout[-2000:]
    assert verdicts == ["PASSED"] * expected
    assert f"{expected:6d} tests completed and passed residual checks," in r.stdout


def test_crash_case_2x1_nb256_n520(tmp_path, hpl_run, hpl_dat):
    """The reported reproducer (Crout, 1ringM, depth 0, mix) exactly."""
    (tmp_path / "HPL.dat").write_text(hpl_dat((520, 1024), (256,), 2, 1, pfact=(1,), rfact=(1,), depth=(0,),
                                              bcast=(1,), swap=2, swapthr=64))
    r = hpl_run(tmp_path, np=2)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.count("PASSED") == 2 and "FAILED" not in r.stdout


@pytest.mark.parametrize("grid", [(1, 1), (2, 1), (1, 2)], ids=lambda g: f"{g[0]}x{g[1]}")
@pytest.mark.parametrize("l1u", [(0, 0), (0, 1), (1, 0), (1, 1)], ids=lambda t: f"l1{t[0]}-u{t[1]}")
def test_blocked_u_solve_all_forms(tmp_path, hpl_run, hpl_dat, grid, l1u):
    """The U rows are solved against L11 in 32-column blocks (DGEMM + narrow
    DTRSM) for every L1 / U storage form: NB above 32, not a multiple of 32,
    and a last panel narrower than one block."""
    P, Q = grid
    l1, u = l1u
    ns, nbs = (37, 300, 513), (64, 100)
    (tmp_path / "HPL.dat").write_text(hpl_dat(ns, nbs, P, Q, pfact=(0, 2), rfact=(1,), depth=(0, 1), bcast=(1,),
                                              l1=l1, u=u))
    r = hpl_run(tmp_path, np=P * Q)
    assert r.returncode == 0, r.stderr[-2000:]
    expected = len(ns) * len(nbs) * 2 * 2
    assert r.stdout.count("PASSED") == expected and "FAILED" not in r.stdout, r.stdout[-2000:]
