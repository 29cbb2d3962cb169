"""Output format, JSON, the generator and the checker's self-test."""

import json
import re

from test_combinations import RESID, RESULT

# Norms hpcc (the reference HPL) reported for N=200, NB=32 on 1x2 (measured
# on this machine type): the same generator must give the same matrix.
HPCC_N200 = {"A_inf": 54.5834, "A_1": 55.3842, "b_inf": 0.49867, "x_inf": 26.178, "x_1": 1401.08}


def test_result_lines_parse_like_xhpl_output(tmp_path, hpl_run, hpl_dat):
    (tmp_path / "HPL.dat").write_text(hpl_dat((50, 64), (16, 32), 1, 2, depth=(0, 1), bcast=(1, 3)))
    r = hpl_run(tmp_path, np=2)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    header = "T/V                N    NB     P     Q               Time                 Gflops"
    assert lines.count(header) == 16
    rows = [RESULT.match(l) for l in lines if l.startswith("W")]
    assert all(rows) and len(rows) == 16
    # The loop order of the reference: N, NB, DEPTH, BCAST (then RFACT, PFACT, NBMIN, NDIV).
    got = [(int(m.group(2)), int(m.group(3)), m.group(1)) for m in rows]
    assert [g[:2] for g in got] == [(50, 16)] * 4 + [(50, 32)] * 4 + [(64, 16)] * 4 + [(64, 32)] * 4
    assert [g[2] for g in got[:4]] == ["WR01C2R4", "WR03C2R4", "WR11C2R4", "WR13C2R4"]
    # Field widths exactly as the reference prints them.
    line = next(l for l in lines if l.startswith("WR01C2R4"))
    assert re.fullmatch(r"WR01C2R4 {10}50 {4}16 {5}1 {5}2 +\d+\.\d\d {4} *\d\.\d{4}e[+-]\d\d", line)
    assert len(line) == 80
    res = [RESID.match(l) for l in lines if l.startswith("||Ax-b||")]
    assert len(res) == 16 and all(m.group(2) == "PASSED" for m in res)
    assert re.search(r"^Finished +16 tests with the following results:$", r.stdout, re.M)
    assert re.search(r"^ +16 tests completed and passed residual checks,$", r.stdout, re.M)
    assert re.search(r"^ +0 tests completed and failed residual checks,$", r.stdout, re.M)
    assert re.search(r"^ +0 tests skipped because of illegal input values\.$", r.stdout, re.M)
    assert lines[-2] == "End of Tests."


def test_json_lines_and_same_matrix_as_reference(tmp_path, hpl_run, hpl_dat):
    (tmp_path / "HPL.dat").write_text(hpl_dat((200,), (32,), 1, 2))
    r = hpl_run(tmp_path, np=2, args=["--json", "out.json"])
    assert r.returncode == 0, r.stderr
    objs = [json.loads(l) for l in (tmp_path / "out.json").read_text().splitlines()]
    assert len(objs) == 1
    o = objs[0]
    assert o["schema"] == "rmax.hpl/1"
    assert o["variant"] == "WR11C2R4" and o["status"] == "PASSED"
    assert o["params"]["N"] == 200 and o["params"]["NB"] == 32 and o["params"]["BCAST"] == "1ringM"
    assert o["time_s"] > 0 and o["gflops"] > 0 and 0 < o["residual"] < 16
    assert set(o["phases_s"]) == {"pfact", "swap", "bcast", "update", "solve", "check"}
    for ph in o["phases_s"].values():
        assert 0 <= ph["min"] <= ph["max"]
    assert o["bytes_sent_total"] > 0
    # Each phase split rank by rank into time blocked in MPI and the rest; "total" sums a rank's phases.
    for split in ("wait_s", "compute_s"):
        assert set(o[split]) == set(o["phases_s"]) | {"total"}
        for ph, v in o[split].items():
            assert 0 <= v["min"] <= v["max"], (split, ph)
            if ph != "total":
                assert v["max"] <= o["phases_s"][ph]["max"] + 1e-6, (split, ph)
    for ph in o["phases_s"]:
        assert o["wait_s"][ph]["min"] + o["compute_s"][ph]["min"] <= o["phases_s"][ph]["max"] + 1e-6
    assert o["wait_s"]["total"]["max"] > 0  # two ranks exchange pivots and panels: some time is spent in MPI
    assert o["wait_s"]["update"]["max"] == 0  # the DGEMM makes no MPI call
    for k, v in HPCC_N200.items():
        assert abs(o["norms"][k] - v) <= 1e-4 * abs(v) + 1e-4, (k, o["norms"][k], v)


def test_json_to_stdout_moves_text_to_stderr(tmp_path, hpl_run, hpl_dat):
    (tmp_path / "HPL.dat").write_text(hpl_dat((20,), (4,)))
    r = hpl_run(tmp_path, np=1, args=["--json", "-"])
    assert r.returncode == 0
    assert json.loads(r.stdout.splitlines()[0])["status"] == "PASSED"
    assert "End of Tests." in r.stderr


def test_corrupted_solution_fails_the_check(tmp_path, hpl_run, hpl_dat):
    """--self-test-corrupt perturbs x before the check: a self-test of the checker."""
    (tmp_path / "HPL.dat").write_text(hpl_dat((40, 41), (8,), 2, 2))
    r = hpl_run(tmp_path, np=4, args=["--self-test-corrupt", "--json", "o.json"])
    assert r.returncode == 0, r.stderr
    res = [RESID.match(l) for l in r.stdout.splitlines() if l.startswith("||Ax-b||")]
    assert len(res) == 2 and all(m.group(2) == "FAILED" and float(m.group(1)) > 16 for m in res)
    assert re.search(r"^ +2 tests completed and failed residual checks,$", r.stdout, re.M)
    assert all(json.loads(l)["status"] == "FAILED" for l in (tmp_path / "o.json").read_text().splitlines())


def test_negative_threshold_skips_the_check(tmp_path, hpl_run, hpl_dat):
    (tmp_path / "HPL.dat").write_text(hpl_dat((30,), (8,), thresh=-1.0))
    r = hpl_run(tmp_path, np=1, args=["--self-test-corrupt"])
    assert r.returncode == 0
    assert "||Ax-b||_oo/(eps" not in r.stdout
    assert re.search(r"^ +1 tests completed and passed residual checks,$", r.stdout, re.M)


def test_output_file_device_and_stderr_device(tmp_path, hpl_run, hpl_dat):
    (tmp_path / "HPL.dat").write_text(hpl_dat((30,), (8,), device=8, outfile="result.txt"))
    r = hpl_run(tmp_path, np=1)
    assert r.returncode == 0 and "T/V" not in r.stdout
    assert "PASSED" in (tmp_path / "result.txt").read_text()
    (tmp_path / "HPL.dat").write_text(hpl_dat((30,), (8,), device=7))
    r = hpl_run(tmp_path, np=1)
    assert "PASSED" in r.stderr and "T/V" not in r.stdout


def test_path_argument_json_input_and_progress(tmp_path, hpl_run):
    spec = {"N": [60], "NB": [8], "P": [1], "Q": [2], "BCAST": [4], "DEPTH": [2], "SWAP": 1}
    (tmp_path / "in.json").write_text(json.dumps(spec))
    r = hpl_run(tmp_path, np=2, args=["in.json", "--progress"])
    assert r.returncode == 0, r.stderr
    assert re.search(r"^WR24C2R4 +60 +8 +1 +2 ", r.stdout, re.M)
    assert "PASSED" in r.stdout
    assert re.search(r"^rmax-hpl: test 1: column \d+ of 60 \([\d.]+% of the work\) [\d.]+ GFLOPS after [\d.]+ s$", r.stderr, re.M)


def test_pmap_column_major_and_idle_ranks(tmp_path, hpl_run, hpl_dat):
    # Two grids in one file; with 3 ranks the 1x2 grid leaves one rank idle.
    (tmp_path / "HPL.dat").write_text(hpl_dat((37,), (5,), pmap=1, grids=[(1, 2), (3, 1)]))
    r = hpl_run(tmp_path, np=3)
    assert r.returncode == 0, r.stderr
    assert re.search(r"^WC11C2R4 +37 +5 +1 +2 ", r.stdout, re.M)
    assert re.search(r"^WC11C2R4 +37 +5 +3 +1 ", r.stdout, re.M)
    assert r.stdout.count("PASSED") == 2


def test_clamped_values_are_accepted(tmp_path, hpl_run, hpl_dat):
    # SWAP 9 -> long, L1/U 5 -> transposed, equilibration 3 -> yes, alignment 0 -> 4.
    (tmp_path / "HPL.dat").write_text(hpl_dat((33,), (4,), 2, 1, swap=9, l1=5, u=5, equil=3, align=0))
    r = hpl_run(tmp_path, np=2)
    assert r.returncode == 0, r.stderr
    assert "SWAP   : Spread-roll (long)" in r.stdout
    assert "ALIGN  : 4 double precision words" in r.stdout
    assert "PASSED" in r.stdout
