"""The one HPL input grammar (native/hpl/input.c): what `rmax-hpl --check`
accepts and refuses, and that whatever rmax's renderer writes, rmax-hpl reads
back as the same values. rmax-hpl --check runs without MPI: about 15 s in all,
most of it the few `rmax` commands run as a user would."""

import json
import random
import subprocess

import pytest

from hplutil import ROOT, dat, hpl_executable

GOOD = dat((20,), (4,))
PREFIX = "rmax-hpl: error: "


def check(data: bytes, *args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([hpl_executable(), "--check", "-", *args], input=data, capture_output=True, timeout=30,
                          cwd=cwd)


def edited(changes: dict, text: str = GOOD) -> bytes:
    """GOOD with lines replaced: {line number (from 1): bytes}."""
    lines = text.encode().split(b"\n")
    for ln, new in changes.items():
        lines[ln - 1] = new
    return b"\n".join(lines)


def refusal(proc) -> str:
    """The one error line of a refused input (exit 2, nothing on stdout)."""
    assert proc.returncode == 2 and proc.stdout == b"", (proc.returncode, proc.stdout, proc.stderr)
    lines = proc.stderr.decode("ascii").splitlines()  # messages are ASCII whatever the input held
    assert len(lines) == 1 and lines[0].startswith(PREFIX), proc.stderr
    return lines[0][len(PREFIX):]


def parsed(proc) -> dict:
    assert proc.returncode == 0 and proc.stderr == b"", proc.stderr
    return json.loads(proc.stdout)


BASE = parsed(check(GOOD.encode()))

REFUSED = {
    "fullwidth digits": ({6: "２００ Ns".encode()},
                         r"line 6: problem sizes (N) must be an integer, got '\xef\xbc\x92"),
    "Arabic-Indic digits": ({6: "٢٠٠".encode()}, "line 6: problem sizes (N) must be an integer"),
    "underscore in a number": ({6: b"2_00"}, "must be an integer, got '2_00'"),
    "NBSP as a separator": ({6: "200\u00a0Ns".encode()}, r"got '200\xc2\xa0Ns'"),
    "decimal point in an integer": ({8: b"4.0"}, "block sizes (NB) must be an integer, got '4.0'"),
    "SWAP of 2^31": ({26: b"2147483648"}, "SWAP = 2147483648 is out of range: integers are 32-bit"),
    "N of 2^31": ({6: b"2147483648"}, "problem sizes (N) = 2147483648 is out of range"),
    "NB of 2^31": ({8: b"2147483648"}, "out of range"),
    "NBMIN of -2^31-1": ({17: b"-2147483649"}, "out of range"),
    "NDIV of 2^31": ({19: b"2147483648"}, "out of range"),
    "DEPTH of 2^31": ({25: b"2147483648"}, "out of range"),
    "alignment of 2^31": ({31: b"2147483648"}, "memory alignment = 2147483648 is out of range"),
    "threshold 1e-400 (underflow)": ({13: b"1e-400"}, "threshold = 1e-400 is out of the range of a double"),
    "threshold 1e400 (overflow)": ({13: b"1e400"}, "threshold = 1e400 is out of the range of a double"),
    "threshold nan": ({13: b"nan"}, "threshold must be a decimal number, got 'nan'"),
    "threshold inf": ({13: b"inf"}, "threshold must be a decimal number, got 'inf'"),
    "threshold -Infinity": ({13: b"-Infinity"}, "got '-Infinity'"),
    "threshold in hex": ({13: b"0x10"}, "got '0x10'"),
    "swapping threshold -1": ({27: b"-1"}, "illegal swapping threshold -1"),
    "130 zeros then 200": ({6: b"0" * 130 + b"200"}, "the value '00000000000000000000000000000000... (133 bytes)' "
                                                     "is longer than 127 bytes"),
    "N of 2^31-1 overflows the memory count": ({6: b"2147483647"}, "N=2147483647 NB=4 DEPTH=1 on a 1 x 1 grid needs "
                                                                  "more than 2^64 bytes per rank"),
    "NB of 2^31-1": ({8: b"2147483647"}, "needs more than 2^64 bytes per rank"),
    "too big for memory": ({6: b"3000000"}, "bytes per rank (72000"),
    "DEPTH too big for memory": ({25: b"2147483647"}, "bytes are available (MemAvailable)"),
    "alignment too big for memory": ({31: b"2147483647"}, "bytes are available (MemAvailable)"),
    "10,000-byte output file name": ({3: b"x" * 10000}, "output file name: the value 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
                                                        "... (10000 bytes)' is longer than 4095 bytes"),
    "output file in a missing folder": ({3: b"no/such/folder/HPL.out", 4: b"8"},
                                        "the output file 'no/such/folder/HPL.out' cannot be created: its folder "
                                        "does not exist"),
    "output file that is a folder": ({3: b"/tmp", 4: b"8"}, "the output file '/tmp' is a folder"),
    "Latin-1 output file name": ({3: b"caf\xe9.out"}, r"the output file name 'caf\xe9.out' is not printable UTF-8"),
    "NUL byte in the title": ({1: b"ti\x00tle"}, "line 1 holds a NUL byte: not a text file"),
    "list of 21 values": ({5: b"21", 6: b" ".join([b"20"] * 21)}, "the number of problem sizes (N) must be "
                                                                   "between 1 and 20, got 21"),
    "list shorter than its count": ({5: b"3", 6: b"20"}, "line 6: problem sizes (N): expected at least 2 values, "
                                                         "found 1"),
    "U+2028 ends no line": ({5: "1\u2028".encode()}, r"got '1\xe2\x80\xa8'"),
    "missing line": ({31: b""}, "line 31: memory alignment: expected at least 1 value, found 0"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_refused_with_one_line(tmp_path, case):
    changes, message = REFUSED[case]
    assert message in refusal(check(edited(changes), cwd=tmp_path))


ACCEPTED = {
    "form feed, vertical tab, U+2028 and NEL in the title": ({1: "a\x0cb\x0bc\u2028d\u0085e".encode()}, {}),
    "Latin-1 bytes in the title and a comment": ({2: b"r\xe9sum\xe9", 6: b"20 taille \xe9"}, {}),
    "form feed and vertical tab in comments": ({6: b"20 \x0c\x0b Ns", 13: "16.0 \u2028 note".encode()}, {}),
    "tab, VT, FF and CR as separators": ({6: b"\t20\x0b\x0cNs\r", 8: b"4\r"}, {}),
    "sign and leading zeros": ({6: b"+020"}, {}),
    "a form feed splits a value": ({6: b"2\x0c0"}, {"N": [2]}),
    "more values than the count (comment)": ({6: b"20 30 40"}, {}),
    "NDIV and NBMIN of 2^31-1": ({17: b"2147483647", 19: b"2147483647"}, {"NBMIN": [2147483647],
                                                                       "NDIV": [2147483647]}),
    "threshold forms": ({13: b".5e+1"}, {"threshold": 5.0}),
    "negative threshold: no check": ({13: b"-1"}, {"threshold": -1.0}),
    "reference's clamps": ({26: b"7", 28: b"5", 30: b"-3", 31: b"-2"}, {"SWAP": 1, "L1": 0, "equilibration": 1,
                                                                        "alignment": 4}),
    "output file used": ({3: b"out/HPL.out", 4: b"8"}, {"output_file": "out/HPL.out", "device_out": 8}),
    "a 4095-byte output file name, unused": ({3: b"y" * 4095}, {"output_file": "y" * 4095}),
}


@pytest.mark.parametrize("case", sorted(ACCEPTED))
def test_accepted(tmp_path, case):
    changes, differences = ACCEPTED[case]
    (tmp_path / "out").mkdir()
    assert parsed(check(edited(changes), cwd=tmp_path)) == {**BASE, **differences}


def test_crlf_file_reads_like_lf():
    assert parsed(check(GOOD.replace("\n", "\r\n").encode())) == BASE


def test_file_over_a_mebibyte_is_refused():
    assert "larger than 1048576 bytes" in refusal(check(edited({2: b"#" * (1 << 20)})))


def test_json_twin_and_fixed_point(tmp_path):
    # --check prints the JSON input form: fed back, it reads the same.
    again = parsed(check(json.dumps(BASE).encode()))
    assert again == BASE
    for text, message in (('{"N": [20], "NB": [4], "P": [1], "Q": [1], "N": [3]}', 'field "N" is given twice'),
                          ('{"N": [20], "NB": [4], "P": [1], "Q": [1]} x', "text after the JSON object"),
                          ('{"N": [20], "NB": [4], "P": [1], "Q": [1], "threshold": NaN}', '"threshold" must be a '
                                                                                          "number, got 'NaN'"),
                          ('{"N": [2e1], "NB": [4], "P": [1], "Q": [1]}', '"N" must hold integers, got \'2e1\''),
                          ('{"N": [20,], "NB": [4], "P": [1], "Q": [1]}', 'must hold integers'),
                          ('{"N": [20], "NB": [4], "P": [1], "Q": [1], "output_file": "a\\u0000b"}',
                           "\\u0000 is not allowed")):
        assert message in refusal(check(text.encode())), text
    escaped = parsed(check(b'{"N": 20, "NB": 4, "P": 1, "Q": 1, "output_file": "caf\\u00e9\\/x\\"y"}'))
    assert escaped["output_file"] == 'caf\u00e9/x"y'


def test_check_is_strict_about_its_own_options(tmp_path):
    (tmp_path / "HPL.dat").write_text(GOOD)
    for args, message in ((["HPL.dat", "--check", "HPL.dat"], "either first or to --check"),
                          (["--check", "HPL.dat", "--json", "-"], "--check only reads the input"),
                          (["--check", "HPL.dat", "--node-ranks", "0"], "--node-ranks: 0 is out of range"),
                          (["--check", "HPL.dat", "--ranks", "x"], "--ranks: 'x' is not a whole number")):
        proc = subprocess.run([hpl_executable(), *args], cwd=tmp_path, capture_output=True, timeout=30)
        assert proc.returncode == 2 and message in proc.stderr.decode(), (args, proc.stderr)


def test_ranks_check_the_grids_as_a_run_does():
    text = edited({10: b"2", 11: b"1 2", 12: b"3 2"})
    assert parsed(check(text))["P"] == [1, 2]
    assert parsed(check(text, "--ranks", "4"))["Q"] == [3, 2]
    assert refusal(check(text, "--ranks", "3")) == "grid 2 x 2 needs 4 processes but only 3 were started"


def test_node_ranks_multiply_the_memory_need():
    # On a 1 x 3 grid each rank holds a third of the 8 N^2 bytes: sized to half of what this
    # machine has free, one rank on the node fits and three do not.
    mem = int(next(l.split()[1] for l in open("/proc/meminfo") if l.startswith("MemAvailable:"))) * 1024
    n = int((3 * mem / 2 / 8) ** 0.5)
    text = edited({6: str(n).encode(), 8: b"64", 12: b"3"})
    assert parsed(check(text))["N"] == [n]
    assert "for the 3 ranks on this node" in refusal(check(text, "--node-ranks", "3"))


def _random_config(rng):
    """Values of every field, within the grammar and small enough to fit in memory."""
    from rmax.hpl.dat import HplConfig

    def some(values, k=None):
        return [rng.choice(values) for _ in range(k or rng.randint(1, 20))]

    ngrid = rng.randint(1, 20)
    return HplConfig(
        ns=some([0, 1, 7, 97, 1000, 4096]), nbs=some([1, 2, 32, 192, 512]), pmap=rng.randint(0, 1),
        grids=[(rng.randint(1, 64), rng.randint(1, 64)) for _ in range(ngrid)],
        threshold=rng.choice([16.0, -1.0, 0.0, 1e-300, 1.7976931348623157e308, rng.uniform(-1e3, 1e3),
                              rng.expovariate(1e-5)]),
        pfacts=some([0, 1, 2]), nbmins=some([1, 4, 2147483647]), ndivs=some([2, 3, 2147483647]),
        rfacts=some([0, 1, 2]), bcasts=some(range(6)), depths=some([0, 1, 2, 5], rng.randint(1, 3)),
        swap=rng.randint(0, 2), swap_threshold=rng.choice([0, 64, 2147483647]), l1_form=rng.randint(0, 1),
        u_form=rng.randint(0, 1), equilibration=rng.randint(0, 1), alignment=rng.choice([1, 4, 8, 16]),
        output_file=rng.choice(["HPL.out", "r\u00e9sultats.txt", "a" * 255, str(ROOT / "x.out")]),
        device=rng.choice([6, 7, -2147483648, 2147483647]))


def test_renderer_round_trip():
    """Whatever rmax's renderer writes, rmax-hpl reads back as the same values (seeded, 40 configs)."""
    from rmax.hpl.dat import checked

    rng = random.Random(14)
    for _ in range(40):
        cfg = _random_config(rng)
        assert checked(cfg) == cfg, cfg


def test_rmax_reads_non_utf8_input_like_rmax_hpl(db, tmp_path):
    """Latin-1 bytes: fine in the title, one error line in a value; never a traceback (rmax hpl check)."""
    from cliutil import assert_one_line_error, run_cli

    path = tmp_path / "HPL.dat"
    path.write_bytes(edited({1: b"r\xe9sultats de l'\xe9t\xe9"}))
    proc = run_cli("hpl", "check", str(path), "--np", "1", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["tests"] == [{"code": "WR11C2R4", "n": 20, "nb": 4, "p": 1, "q": 1, "depth": 1,
                                                 "bcast": 1, "rfact": 1, "pfact": 2, "nbmin": 4, "ndiv": 2}]
    path.write_bytes(edited({6: b"2\xe90"}))
    assert_one_line_error(run_cli("hpl", "check", str(path)), 2,
                          r"line 6: problem sizes (N) must be an integer, got '2\xe90'", "rmax-hpl --check FILE")


@pytest.mark.parametrize("changes, message", [
    ({27: b"-1"}, "illegal swapping threshold -1"),
    ({6: b"2147483648"}, "problem sizes (N) = 2147483648 is out of range"),
    ({17: b"2147483648"}, "recursion stopping sizes (NBMIN) = 2147483648 is out of range"),
    ({6: b"3000000"}, "bytes are available (MemAvailable)"),
], ids=["swap-threshold-1", "N-2^31", "NBMIN-2^31", "too-big-for-memory"])
def test_refused_input_never_becomes_a_run(db, tmp_path, changes, message):
    """What rmax once accepted and rmax-hpl refused became failed runs; now `rmax hpl run` refuses it first."""
    from cliutil import assert_one_line_error, run_cli

    from rmax.store import open_store

    path = tmp_path / "HPL.dat"
    path.write_bytes(edited(changes))
    assert_one_line_error(run_cli("hpl", "run", str(path), "--np", "1"), 2, message)
    with open_store() as store:
        assert store.list() == []
