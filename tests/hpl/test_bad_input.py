"""Bad input: one clear message on stderr, a non-zero exit, no hang (every
rank leaves: rank 0 validates and broadcasts its verdict). The grammar's
cases one by one are in test_grammar.py (rmax-hpl --check, no MPI).

Rank 0 broadcasts three verdicts (main.c): the input read, the grids against
the ranks started, the memory per node. One refusal of each runs on 2 ranks
under mpirun (rank 1 must leave too); the other messages come from the same
verdicts, so they run as one rank without mpirun (~20 ms instead of ~1.5 s)."""

import pytest

from hplutil import dat, run_alone


def lines_of(text):
    return text.splitlines()


def replace_line(text, lineno, new):
    lines = lines_of(text)
    lines[lineno - 1] = new
    return "\n".join(lines) + "\n"


GOOD = dat((20,), (4,), 1, 2)

CASES = {
    "short-file": ("\n".join(lines_of(GOOD)[:17]) + "\n", "line 18 is missing"),
    "empty-file": ("", "line 3 is missing"),
    "non-numeric-N": (replace_line(GOOD, 6, "abc   Ns"), "line 6: problem sizes (N) must be an integer, got 'abc'"),
    "non-numeric-threshold": (replace_line(GOOD, 13, "x16   threshold"), "line 13: threshold must be a decimal number"),
    # (one rank's grid: the overflow is the memory verdict's, whatever the ranks)
    "N-overflows-the-memory-count": (replace_line(dat((20,), (4,)), 6, "2147483647"),
                                     "needs more than 2^64 bytes per rank"),
    "missing-list-values": (replace_line(GOOD, 5, "3   how many Ns"), "line 6: problem sizes (N) must be an integer, got 'problem'"),
    "negative-N": (replace_line(GOOD, 6, "-5   Ns"), "illegal N = -5"),
    "zero-NB": (replace_line(GOOD, 8, "0   NBs"), "illegal NB = 0"),
    "list-too-long": (replace_line(GOOD, 5, "21   # of Ns"), "must be between 1 and 20, got 21"),
    "bad-pfact": (replace_line(GOOD, 15, "7   PFACTs"), "illegal PFACT = 7"),
    "bad-ndiv": (replace_line(GOOD, 19, "1   NDIVs"), "illegal NDIV = 1"),
    "bad-bcast": (replace_line(GOOD, 23, "6   BCASTs"), "illegal BCAST = 6"),
    "negative-depth": (replace_line(GOOD, 25, "-1   DEPTHs"), "illegal DEPTH = -1"),
    "grid-too-large": (dat((20,), (4,), 2, 2), "grid 2 x 2 needs 4 processes but only 2 were started"),
    "does-not-fit-in-memory": (dat((3000000,), (64,), 1, 2), "bytes per rank"),
    "json-unknown-field": ('{"N": [10], "NB": [2], "P": [1], "Q": [1], "bogus": 1}', 'unknown field "bogus"'),
    "json-too-long": ('{"N": [' + ",".join(["1"] * 21) + '], "NB": [2], "P": [1], "Q": [1]}',
                      "more than 20 values"),
}


# One refusal of each verdict rank 0 broadcasts: read, grids, memory.
ON_TWO_RANKS = {"short-file", "grid-too-large", "does-not-fit-in-memory"}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_is_refused_cleanly(tmp_path, hpl_run, case):
    text, message = CASES[case]
    (tmp_path / "HPL.dat").write_text(text)
    r = hpl_run(tmp_path, np=2, timeout=30) if case in ON_TWO_RANKS else run_alone(tmp_path, timeout=30)
    assert r.returncode != 0
    errs = [l for l in r.stderr.splitlines() if l.startswith("rmax-hpl: error:")]
    assert len(errs) == 1, r.stderr
    assert message in errs[0], errs[0]
    if case == "does-not-fit-in-memory":
        assert "bytes are available (MemAvailable)" in errs[0] and "for the 2 ranks on this node" in errs[0]
    assert "T/V" not in r.stdout


def test_missing_file(tmp_path):
    r = run_alone(tmp_path, timeout=30)
    assert r.returncode != 0
    assert "rmax-hpl: error: cannot open HPL.dat" in r.stderr


def test_unknown_option(tmp_path):
    (tmp_path / "HPL.dat").write_text(GOOD)
    r = run_alone(tmp_path, args=["--no-such-option"], timeout=30)
    assert r.returncode != 0 and "rmax-hpl: error:" in r.stderr
