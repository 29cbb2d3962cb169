"""HPL.dat reading/writing, result parsing and the hpcc engine (the reference) driven by rmax."""

import json
import os
import shutil

import pytest
from cliutil import assert_one_line_error, run_cli

from rmax.errors import RmaxError
from rmax.hpl.dat import HplConfig, checked, read, render
from rmax.hpl.output import parse_output
from rmax.model.hpl_model import hpl_flops

SAMPLE_OUTPUT = """
T/V                N    NB     P     Q               Time                 Gflops
--------------------------------------------------------------------------------
WR11C2R4       10000   192     1     2               4.46             1.4940e+02
HPL_pdgesv() start time Sat Nov 21 10:00:00 2026

--------------------------------------------------------------------------------
||Ax-b||_oo/(eps*(||A||_oo*||x||_oo+||b||_oo)*N)=   2.70174331e-03 ...... PASSED
================================================================================
WC02L3R16        997    32     2     1               0.05             1.3000e+01
||Ax-b||_oo/(eps*(||A||_oo*||x||_oo+||b||_oo)*N)=   2.10000000e+01 ...... FAILED
"""


def test_render_check_roundtrip_keeps_every_field():
    cfg = HplConfig(ns=[1, 97, 1000], nbs=[1, 64], pmap=1, grids=[(1, 2), (2, 1), (1, 1)], threshold=-1.0,
                    pfacts=[0, 1, 2], nbmins=[1, 8], ndivs=[2, 3], rfacts=[0, 2], bcasts=[0, 5], depths=[0, 3],
                    swap=0, swap_threshold=32, l1_form=1, u_form=1, equilibration=0, alignment=16,
                    output_file="out.txt", device=7)
    assert checked(cfg) == cfg


def test_loop_order_and_variant_code():
    cfg = HplConfig(ns=[100, 200], nbs=[8], grids=[(1, 1), (1, 2)], depths=[0, 1], pfacts=[1], rfacts=[2])
    tests = list(cfg.tests())
    assert [(t["p"], t["q"], t["n"], t["depth"]) for t in tests][:4] == [(1, 1, 100, 0), (1, 1, 100, 1),
                                                                          (1, 1, 200, 0), (1, 1, 200, 1)]
    assert cfg.variant_code(tests[1]) == "WR11R2C4"


def _lines(cfg=None):
    return render(cfg or HplConfig()).splitlines()


@pytest.mark.parametrize("edit, words", [
    (lambda l: l[:20], "line 21 is missing"),
    (lambda l: l[:5] + ["abc  Ns"] + l[6:], "line 6: problem sizes (N) must be an integer, got 'abc'"),
    (lambda l: l[:4] + ["21  sizes"] + l[5:], "must be between 1 and 20, got 21"),
    (lambda l: l[:5] + ["-5  Ns"] + l[6:], "illegal N = -5"),
    (lambda l: l[:7] + ["0  NBs"] + l[8:], "illegal NB = 0"),
    (lambda l: l[:4] + ["2", "1000"] + l[6:], "line 6: problem sizes (N): expected at least 2 values, found 1"),
])
def test_malformed_input_names_the_line(tmp_path, edit, words):
    path = tmp_path / "HPL.dat"
    path.write_text("\n".join(edit(_lines())))
    with pytest.raises(RmaxError) as e:
        read(path)
    assert words in e.value.message and e.value.exit_code == 2


def test_reference_clamping_of_switches(tmp_path):
    lines = _lines()
    lines[25], lines[27], lines[29], lines[30] = "7", "5", "9", "-2"
    path = tmp_path / "HPL.dat"
    path.write_text("\n".join(lines))
    cfg = read(path)
    assert (cfg.swap, cfg.l1_form, cfg.equilibration, cfg.alignment) == (1, 0, 1, 4)


def test_json_input(tmp_path):
    p = tmp_path / "hpl.json"
    p.write_text(json.dumps({"N": [500], "NB": 64, "P": [1], "Q": [2]}))
    cfg = read(p)
    assert cfg.ns == [500] and cfg.nbs == [64] and cfg.grids == [(1, 2)] and cfg.depths == [1]
    p.write_text(json.dumps({"N": [500], "nb": 3}))
    with pytest.raises(RmaxError, match='unknown field "nb"'):
        read(p)


def test_output_parser_reads_results_and_verdicts():
    res = parse_output(SAMPLE_OUTPUT)
    assert [(r.code, r.n, r.nb, r.p, r.q, r.verdict) for r in res] == [
        ("WR11C2R4", 10000, 192, 1, 2, "PASSED"), ("WC02L3R16", 997, 32, 2, 1, "FAILED")]
    assert res[0].gflops == pytest.approx(149.4) and res[0].residual == pytest.approx(2.70174331e-03)
    assert res[1].variant == {"pmap": 1, "depth": 0, "bcast": 2, "rfact": 0, "ndiv": 3, "pfact": 2, "nbmin": 16}
    assert hpl_flops(10000) / 4.46 / 1e9 == pytest.approx(149.5, rel=1e-3)   # HPL 2.3 prints 1.495e+02


def test_hpcc_engine_runs_the_reference_and_stores_each_test(db, tmp_path):
    cfg = HplConfig(ns=[400], nbs=[32, 64], grids=[(1, 2)])
    dat = tmp_path / "HPL.dat"
    dat.write_text(render(cfg))
    proc = run_cli("hpl", "run", str(dat), "--engine", "hpcc", "--json", timeout=300)
    assert proc.returncode == 0, proc.stderr
    rec = json.loads(proc.stdout)
    assert rec["status"] == "ok" and len(rec["summary"]["tests"]) == 2 and rec["summary"]["passed"] == 2
    assert [t["params"]["nb"] for t in rec["tests"]] == [32, 64]
    assert all(t["parent"] == rec["id"] and t["summary"]["gflops"] > 0 for t in rec["tests"])
    assert "HPL_Tflops" in rec["summary"]["hpcc_summary"]


def test_rmax_engine_stores_each_test_with_its_phase_times(db, tmp_path):
    dat = tmp_path / "HPL.dat"
    dat.write_text(render(HplConfig(ns=[300, 500], nbs=[64], grids=[(1, 2)])))
    proc = run_cli("hpl", "run", str(dat), "--np", "2", "--json", timeout=300)
    assert proc.returncode == 0, proc.stderr
    rec = json.loads(proc.stdout)
    assert rec["status"] == "ok" and rec["summary"]["passed"] == 2
    assert [t["params"]["n"] for t in rec["tests"]] == [300, 500]
    for t in rec["tests"]:
        phases = t["summary"]["phases"]
        assert set(phases) == {"pfact", "swap", "bcast", "update", "solve", "check"}
        assert all(0 <= v["min"] <= v["max"] <= t["summary"]["time_s"] + 1 for v in phases.values())
        assert phases["update"]["max"] > 0
        wait, compute = t["summary"]["phases_wait"], t["summary"]["phases_compute"]
        assert set(wait) == set(compute) == set(phases) | {"total"}
        assert all(wait[p]["max"] <= phases[p]["max"] + 1e-6 for p in phases)


def test_hpl_run_bad_input(db, tmp_path):
    assert_one_line_error(run_cli("hpl", "run", str(tmp_path / "none.dat")), 2, "not found")
    dat = tmp_path / "HPL.dat"
    dat.write_text(render(HplConfig(grids=[(2, 2)])))
    assert_one_line_error(run_cli("hpl", "run", str(dat), "--np", "2"), 2,
                          "grid 2 x 2 needs 4 processes but only 2 were started")
    assert_one_line_error(run_cli("hpl", "run", str(dat), "--engine", "linpack"), 2, "unknown HPL engine")
    assert_one_line_error(run_cli("hpl", "run", str(dat), "--np", "4", "--oversubscribe", "--engine",
                                  f"xhpl:{tmp_path}/nope"), 2, "not an executable")
    # ranks x BLAS threads bound to more cores than there are: refused by check as by run, not stored failed
    dat.write_text(render(HplConfig(ns=[200], grids=[(1, 2)])))
    for cmd in ("check", "run"):
        assert_one_line_error(run_cli("hpl", cmd, str(dat), "--np", "2", "--blas-threads", str(os.cpu_count())), 2,
                              f"2 ranks x {os.cpu_count()} BLAS threads need")
    # a build that is not there, or one of another MPI than the launcher's: refused before a run
    assert_one_line_error(run_cli("hpl", "run", str(dat), "--np", "2", "--mpi", "nompi"), 2,
                          "no nompi build of rmax's MPI executables (builds here: openmpi")
    if shutil.which("mpiexec.mpich"):
        assert_one_line_error(run_cli("hpl", "run", str(dat), "--np", "2", "--mpi", "mpich", "--launcher", "mpirun"),
                              2, "the mpirun launcher starts Open MPI jobs, but RMAX_MPI=mpich (--mpi) chooses")
    # a named pipe would block the reader forever: refused by both commands, nothing stored
    fifo = tmp_path / "pipe.dat"
    os.mkfifo(fifo)
    for cmd in ("run", "check"):
        assert_one_line_error(run_cli("hpl", cmd, str(fifo), "--np", "2", timeout=30), 2, "not a regular file")
    assert json.loads(run_cli("runs", "list", "--json", check=True).stdout) == []


def test_results_that_cannot_be_written_are_no_success(tmp_path):
    """rmax-hpl exits 1, saying where, when its output file, standard output or JSON file cannot
    be written (a full disk: /dev/full), instead of 0 with the results lost."""
    import subprocess

    from rmax.native import executable

    dat = tmp_path / "HPL.dat"
    dat.write_text(render(HplConfig(ns=[200], nbs=[32], output_file="/dev/full", device=8)))
    cases = [([str(dat)], None, "/dev/full")]
    dat2 = tmp_path / "stdout.dat"
    dat2.write_text(render(HplConfig(ns=[200], nbs=[32])))
    cases += [([str(dat2)], "/dev/full", "standard output"), ([str(dat2), "--json", "/dev/full"], None, "/dev/full")]
    for args, stdout, where in cases:
        with open(stdout or os.devnull, "w") as out:
            p = subprocess.run([executable("rmax-hpl"), *args], stdout=out, stderr=subprocess.PIPE, text=True,
                               timeout=60)
        assert p.returncode == 1 and f"cannot write the results to {where}" in p.stderr, (args, p.stderr)
    p = subprocess.run([executable("rmax-hpl"), str(dat2)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and "PASSED" in p.stdout
