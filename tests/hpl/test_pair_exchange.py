"""The direct exchange of two process rows (swap.c's hpl_pair_*, update.c's
update_pair) in updates of several pieces of columns (at least 512 columns:
the first piece is 256): D sends the first piece of U before solving it (O
solves its own copy), the later ones solved, and O runs its DGEMM piece by
piece. The other HPL tests' matrices are too small for more than one piece.
2x1 with NB dividing N or not (a last panel narrower than NB), look-ahead
depths 0-2, and each SWAP, L1 and U form once (the pair path does without
the all-gather they choose)."""

import pytest

FORMS = [(0, 0, 0), (1, 1, 0), (2, 0, 1)]   # SWAP, L1, U


@pytest.mark.parametrize("form", FORMS, ids=lambda f: f"swap{f[0]}-l1{f[1]}-u{f[2]}")
def test_pair_exchange_in_pieces_passes(tmp_path, hpl_run, hpl_dat, form):
    swap, l1, u = form
    ns, nbs, depths = (1300,), (32, 100), (0, 1, 2)
    (tmp_path / "HPL.dat").write_text(hpl_dat(ns, nbs, 2, 1, pfact=(2,), rfact=(1,), depth=depths, bcast=(1,),
                                              swap=swap, swapthr=100, l1=l1, u=u, equil=swap % 2))
    r = hpl_run(tmp_path, np=2, timeout=120)
    assert r.returncode == 0, (r.stdout[-2000:], r.stderr[-2000:])
    expected = len(ns) * len(nbs) * len(depths)
    verdicts = [line.rsplit(" ", 1)[-1] for line in r.stdout.splitlines() if line.startswith("||Ax-b||")]
    assert verdicts == ["PASSED"] * expected, r.stdout[-2000:]
    assert f"{expected:6d} tests completed and passed residual checks," in r.stdout
