"""The model and scale commands as a user runs them."""

import json
import shutil
import sys

import pytest

from cliutil import assert_one_line_error, run_cli

HPCC = shutil.which("hpcc") and shutil.which("mpirun")


def test_model_speedup_table_json_and_plot(db, tmp_path):
    svg = tmp_path / "fig2.svg"
    p = run_cli("model", "speedup", "--ts", "10", "--tp", "10,1000,100000", "--tis", "1", "--tip", "1",
                "--plot", str(svg), "--json", check=True)
    d = json.loads(p.stdout)
    assert d["form"] == "linear" and len(d["curves"]) == 3
    c = d["curves"][1]
    assert c["best"]["n"] == 32                         # sqrt(1000 / 1) = 31.6
    s10 = next(x for x in c["points"] if x["n"] == 1)["speedup"]
    assert s10 == pytest.approx(1010 / (10 + 1 + 1000 + 1))
    assert svg.read_text().lstrip().startswith("<?xml") and "<svg" in svg.read_text()
    p = run_cli("model", "speedup", "--ts", "10", "--tp", "1000", "--tis", "1", "--quadratic", check=True)
    assert "N^2" in p.stdout and "best N" in p.stdout


@pytest.mark.parametrize("args,words", [
    (["--ts", "-1", "--tp", "10"], ["--ts", "non-negative"]),
    (["--ts", "1", "--tp", "abc"], ["--tp", "not a number"]),
])
def test_model_speedup_bad_input(db, args, words):
    assert_one_line_error(run_cli("model", "speedup", *args), 2, *words)


def test_model_hpl_with_explicit_rates(db):
    p = run_cli("model", "hpl", "--nodes", "4", "--ranks-per-node", "2", "--grid", "2x4", "--nb", "200",
                "--n", "10000", "--alpha", "1e-5", "--beta", "1e8", "--gamma", "1e-10", "--no-calibration",
                "--json", check=True)
    d = json.loads(p.stdout)
    x = d["predictions"][0]
    assert d["grid"] == [2, 4]
    # by hand: 2/3 1e12 1e-10 / 8 + (8/1e8) 1e8 10 / 16 + 1e-5 1e4 (201 + 2) / 200
    expected = 2 / 3 * 1e12 * 1e-10 / 8 + 8 * 10 / 16 + 1e-5 * 1e4 * 203 / 200
    assert x["time_s"] == pytest.approx(expected)
    assert x["gflops"] == pytest.approx((2 / 3 * 1e12 + 1.5e8) / expected / 1e9)
    p = run_cli("model", "hpl", "--nodes", "1", "--ranks-per-node", "2", "--memory-per-node", "1",
                "--alpha", "3e-7", "--beta", "4e9", "--gamma", "1e-11", "--kappa", "10", check=True)
    assert "Predicted HPL" in p.stdout and "kappa  = 10" in p.stdout
    p = run_cli("model", "hpl", "--nodes", "1", "--ranks-per-node", "2", "--memory-per-node", "1", "--n", "8000",
                "--alpha", "3e-7", "--beta", "4e9", "--gamma", "1e-11", "--tau", "2e-5", "--json", check=True)
    x = json.loads(p.stdout)["predictions"][0]
    assert x["terms"]["overhead_s"] == pytest.approx(2e-5 * 8000)
    assert x["time_s"] == pytest.approx(x["reference_time_s"] + 2e-5 * 8000)


@pytest.mark.parametrize("args,words", [
    (["--nodes", "0"], ["--nodes", "at least 1"]),
    (["--grid", "2by4"], ["malformed grid", "2by4"]),
    (["--grid", "4x4", "--nodes", "1", "--ranks-per-node", "2"], ["needs 16 processes"]),
    (["--alpha", "-1"], ["alpha"]),
    (["--kappa", "-2"], ["kappa must be non-negative"]),
    (["--kappa", "1", "--tau", "1e-6"], ["--kappa or --tau, not both"]),
])
def test_model_hpl_bad_input(db, args, words):
    base = ["--alpha", "1e-6", "--beta", "1e9", "--gamma", "1e-11", "--n", "1000", "--no-calibration"]
    assert_one_line_error(run_cli("model", "hpl", *base, *args), 2, *words)


def test_model_hpl_without_measurements_says_what_to_run(db):
    p = run_cli("model", "hpl", "--n", "1000", "--alpha", "1e-6", "--beta", "1e9")
    assert_one_line_error(p, 1, "no DGEMM rate measured on this node", "rmax bench dgemm")


# Every rank sleeps 0.25 s of serial work plus 0.5 s shared by the ranks (Open MPI's size variable), and
# rank 0 says so: the time between its two clock readings is its region, the launch is not in it.
KNOWN_PARTS = [sys.executable, "-S", "-c", "import os, sys, time; t = time.monotonic(); "
               "time.sleep(0.25 + 0.5 / int(os.environ.get('OMPI_COMM_WORLD_SIZE', '1'))); "
               "os.environ.get('OMPI_COMM_WORLD_RANK', '0') == '0' and "
               "sys.stdout.write(f'rmax-region-seconds: {time.monotonic() - t}\\n')"]


@pytest.mark.skipif(not HPCC, reason="needs mpirun")
def test_scale_user_command_fits_the_known_parts(db):
    p = run_cli("scale", "--ranks", "1,2,4", "--oversubscribe", "--repeats", "2", "--json", "--", *KNOWN_PARTS,
                timeout=240, check=True)
    d = json.loads(p.stdout)
    assert d["kind"] == "scale" and d["status"] == "ok"
    s = d["summary"]
    assert [x["ranks"] for x in s["points"]] == [1, 2, 4] and all(x["runs"] == 2 for x in s["points"])
    assert s["points"][1]["karp_flatt"] is not None
    # the warm-up showed the region line: no empty launches, nothing subtracted
    assert "own region" in s["time_statistic"] and "launch_overhead_s" not in s
    amdahl = next(f for f in s["fit"]["fits"] if f["form"] == "amdahl")
    for name, truth in (("ts", 0.25), ("tp", 0.5)):
        lo, hi = amdahl["interval"][name]
        assert lo <= truth <= hi and hi - lo < 0.4, (name, amdahl)
    runs = json.loads(run_cli("runs", "list", "--json", check=True).stdout)
    kids = [r for r in runs if r["kind"] == "scale-point"]
    assert len(kids) == 6 and all(k["parent"] == d["id"] for k in kids)
    assert sorted(r["kind"] for r in runs) == ["scale"] + ["scale-point"] * 6     # no scale-launch
    assert sorted(i for x in s["points"] for i in x["run_ids"]) == sorted(k["id"] for k in kids)


def test_scale_bad_input(db):
    assert_one_line_error(run_cli("scale", "--ranks", "2,4", "--", "true"), 2, "must include 1")
    assert_one_line_error(run_cli("scale", "--weak", "--", "true"), 2, "--weak")


@pytest.mark.skipif(not HPCC, reason="needs hpcc and mpirun")
def test_scale_hpl_tiny_with_hpcc(db):
    p = run_cli("scale", "--ranks", "1,2", "--repeats", "2", "--n", "480", "--nb", "48", "--engine", "hpcc",
                "--json", "hpl", timeout=300, check=True)
    d = json.loads(p.stdout)
    pts = d["summary"]["points"]
    assert [x["n"] for x in pts] == [480, 480] and all(x["gflops"]["median"] > 0 for x in pts)
    w = json.loads(run_cli("scale", "--ranks", "1,2", "--repeats", "1", "--n", "480", "--nb", "48", "--engine",
                           "hpcc", "--weak", "--json", "hpl", timeout=300, check=True).stdout)
    assert [x["n"] for x in w["summary"]["points"]] == [480, 672]    # 480 sqrt(2) = 679 -> multiple of 48
    assert w["summary"]["fit"] is None
