"""dgemm: checked products, complete records, BLAS selection and its errors."""

import json

from cliutil import assert_one_line_error, run_cli
from node_helpers import check_measurement, node, records

SMALL = ("--sizes", "64,128", "--k", "16,32", "--mn", "128", "--budget", "0.05", "--sample-time", "0.002")


def test_records_are_complete_and_validated():
    recs = records("dgemm", *SMALL)
    assert [(r["sweep"], r["m"], r["n"], r["k"]) for r in recs] == [
        ("square", 64, 64, 64), ("square", 128, 128, 128), ("k", 128, 128, 16), ("k", 128, 128, 32)]
    for r in recs:
        check_measurement(r, "rmax.dgemm/1", "GFLOPS")
        assert r["validated"] is True and r["calls_per_sample"] >= 1
        assert r["summary"]["median"] > 0.1


def test_given_shapes_are_measured_and_checked():
    recs = records("dgemm", "--sweep", "shape", "--shapes", "96x48x16,40x80x24", "--budget", "0.05",
                   "--sample-time", "0.002")
    assert [(r["sweep"], r["m"], r["n"], r["k"]) for r in recs] == [("shape", 96, 48, 16), ("shape", 40, 80, 24)]
    assert all(r["validated"] is True and r["summary"]["median"] > 0.1 for r in recs)
    recs = records("dgemm", "--sweep", "shape", "--shapes", "64x32x16", "--budget", "0.02", "--self-test-corrupt")
    assert recs and recs[0]["validated"] is False
    for args, words in ((["--shapes", "10x10"], "not a list of MxNxK"), (["--shapes", "0x5x5"], "greater than zero"),
                        (["--sweep", "shape"], "needs --shapes"), (["--shapes", "200000x200000x8"], "does not fit")):
        proc = node("dgemm", *args)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and words in proc.stderr, proc.stderr


def test_a_point_whose_calls_are_long_takes_fewer_blocks_within_its_budget():
    # one call of this shape is far longer than the budget and a block (sample-time 1e-5 s): the
    # point takes the fewest blocks (3), not the usual 5, rather than overrun the time it was given
    rec = records("dgemm", "--sweep", "shape", "--shapes", "512x512x256", "--budget", "0.001", "--sample-time", "0.00001")[0]
    assert rec["calls_per_sample"] == 1 and rec["summary"]["n"] == 3 and rec["validated"] is True
    rec = records("dgemm", "--sweep", "shape", "--shapes", "32x32x16", "--budget", "0.05", "--sample-time", "0.002")[0]
    assert rec["summary"]["n"] >= 5   # short calls: the usual minimum


def test_cli_stores_the_shapes(db):
    rec = json.loads(run_cli("bench", "dgemm", "--sweep", "shape", "--shapes", "96x48x16", "--budget", "0.05",
                             "--json", check=True).stdout)
    (p,) = rec["summary"]["shape"]
    assert (p["m"], p["n"], p["k"]) == (96, 48, 16) and p["median"] > 0 and rec["summary"]["k"] == []
    for args, words in ((["--shapes", "10x10"], "not a shape MxNxK"), (["--shapes", "0x5x5"], "at least 1"),
                        (["--sweep", "shape"], "needs --shapes"), (["--shapes", "200000x200000x8"], "does not fit")):
        assert_one_line_error(run_cli("bench", "dgemm", *args), 2, words)


def test_a_wrong_product_is_caught():
    recs = records("dgemm", "--sweep", "square", "--sizes", "64", "--budget", "0.02", "--self-test-corrupt")
    assert recs and recs[0]["validated"] is False


def test_bad_dimensions_are_one_line_errors():
    for args, words in ((["--sizes", "0"], "greater than zero"), (["--k", "-4"], "not a size"),
                        (["--sizes", "200000"], "does not fit")):
        proc = node("dgemm", *args)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and words in proc.stderr, proc.stderr


def test_cli_stores_the_run_and_the_blas_loaded(db):
    proc = run_cli("bench", "dgemm", "--sizes", "64,96", "--k", "16,32", "--mn", "96", "--budget", "0.05", "--json",
                   check=True)
    rec = json.loads(proc.stdout)
    assert rec["status"] == "ok" and rec["kind"] == "dgemm"
    assert [p["n"] for p in rec["summary"]["square"]] == [64, 96]
    assert rec["summary"]["nb_suggested"] in (16, 32)
    assert rec["summary"]["blas"]["name"] and rec["summary"]["threads"] == 1  # what really ran is recorded
    assert rec["environment"]["OPENBLAS_NUM_THREADS"] == "1"


def test_cli_runs_another_blas(db):
    from rmax import blas

    names = {b.name for b in blas.installed()}
    other = "reference" if "reference" in names else sorted(names)[0]
    proc = run_cli("bench", "dgemm", "--blas", other, "--sweep", "square", "--sizes", "64", "--budget", "0.02",
                   "--json", check=True)
    rec = json.loads(proc.stdout)
    assert rec["params"]["blas_selected"]["name"] == other
    assert rec["summary"]["blas"]["name"] == other


def test_cli_bad_input(tmp_path):
    assert_one_line_error(run_cli("bench", "dgemm", "--blas", "nosuchblas"), 2, "unknown BLAS 'nosuchblas'")
    not_blas = tmp_path / "libnotblas.so"
    not_blas.write_text("not a library")
    assert_one_line_error(run_cli("bench", "dgemm", "--blas", str(not_blas)), 2, "not")
    assert_one_line_error(run_cli("bench", "dgemm", "--sizes", "0"), 2, "greater than zero")
    assert_one_line_error(run_cli("bench", "dgemm", "--sizes", "-3"), 2, "greater than zero")
    assert_one_line_error(run_cli("bench", "dgemm", "--sizes", "300000"), 2, "does not fit")
