"""cpurate: Brown's kernel checks itself, its records are complete, and the CLI stores a run."""

import json

from cliutil import assert_one_line_error, run_cli
from node_helpers import check_measurement, node, records

SMALL = ("--min-size", "1K", "--max-size", "16K", "--points-per-octave", "1", "--reps", "5",
         "--sample-time", "0.0005", "--budget", "2")


def test_records_are_complete_and_validated():
    recs = records("cpurate", *SMALL)
    meas = [r for r in recs if r["schema"] == "rmax.cpurate/1"]
    assert {r["precision"] for r in meas} == {"double", "single"}
    assert sorted({r["bytes"] for r in meas}) == [1024, 2048, 4096, 8192, 16384]
    for r in meas:
        check_measurement(r, "rmax.cpurate/1", "GFLOPS")
        assert r["validated"] is True
        assert r["elements"] * (8 if r["precision"] == "double" else 4) == r["bytes"]
        assert r["passes"] >= 1 and r["empty_loop_s"] >= 0 and r["flops_per_element"] == 4
        assert r["summary"]["n"] >= 5 and r["summary"]["median"] > 0.05
    sweep = recs[-1]
    assert sweep["schema"] == "rmax.cpurate.sweep/1" and sweep["stopped_by"] == "max-size"
    assert sweep["lengths_measured"] == 5


def test_a_wrong_answer_is_caught():
    recs = records("cpurate", *SMALL, "--precision", "double", "--self-test-corrupt")
    meas = [r for r in recs if r["schema"] == "rmax.cpurate/1"]
    assert meas and all(r["validated"] is False for r in meas)


def test_budget_ends_the_sweep():
    recs = records("cpurate", "--max-size", "64M", "--budget", "0.3", "--reps", "5", "--precision", "single")
    sweep = recs[-1]
    assert sweep["stopped_by"] == "budget" and sweep["lengths_measured"] < sweep["lengths_planned"]


def test_bad_sizes_are_one_line_errors():
    for args, words in ((["--max-size", "0"], "greater than zero"), (["--min-size", "-1K"], "not a size"),
                        (["--max-size", "900G"], "does not fit")):
        proc = node("cpurate", *args)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and words in proc.stderr, proc.stderr


def test_cli_stores_the_run_with_boundaries(db):
    proc = run_cli("bench", "cpurate", "--quick", "--budget", "1", "--max-size", "256K", "--json", check=True)
    rec = json.loads(proc.stdout)
    assert rec["status"] == "ok" and rec["kind"] == "cpurate"
    from rmax.families import get

    s = get("cpurate").Summary.load(rec["summary"])
    assert [c.precision for c in s.curves] == ["double", "single"] and s.unit == "GFLOPS"
    assert all(p.median > 0 and p.n >= 2 for c in s.curves for p in c.points)
    assert len(rec["samples"]) == sum(len(c.points) for c in s.curves)
    assert {f.key for f in get("cpurate").metrics(s)} == {"double.best", "single.best"}
    # a curve without a step reads as flat only when it is: a threefold fall is not "flat"
    import dataclasses

    c = s.curves[0]
    falling = dataclasses.replace(c, rate_steps=[], points=[dataclasses.replace(p, median=30.0 / (1 + 2 * (i > 0)))
                                                            for i, p in enumerate(c.points)])
    for curve, word in ((falling, "varies"),
                        (dataclasses.replace(falling, points=[dataclasses.replace(p, median=30.0) for p in c.points]),
                         "is flat")):
        notes = get("cpurate").view(dataclasses.replace(s, curves=[curve])).notes
        assert any(n.startswith(f"{c.precision}: the rate {word}") for n in notes), notes
    from rmax.store import open_store

    with open_store(db) as store:
        assert store.get(rec["id"]).status == "ok"


def test_cli_bad_input():
    assert_one_line_error(run_cli("bench", "cpurate", "--max-size", "0"), 2, "--max-size", "greater than zero")
    assert_one_line_error(run_cli("bench", "cpurate", "--max-size", "lots"), 2, "not a size")
    assert_one_line_error(run_cli("bench", "cpurate", "--max-size", "100000G"), 2, "does not fit")
    assert_one_line_error(run_cli("bench", "cpurate", "--min-size", "1M", "--max-size", "4K"), 2, "larger than")
