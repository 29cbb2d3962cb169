"""memcopy: every copy is checked, records are complete, the CLI stores a run."""

import json

from cliutil import assert_one_line_error, run_cli
from node_helpers import check_measurement, node, records


def test_records_are_complete_and_validated():
    recs = records("memcopy", "--min-size", "4K", "--max-size", "1M", "--points-per-octave", "1", "--budget", "2",
                   "--sample-time", "0.0005")
    meas = [r for r in recs if r["schema"] == "rmax.memcopy/1"]
    assert [r["bytes"] for r in meas] == [4096 * 2**i for i in range(9)]
    for r in meas:
        check_measurement(r, "rmax.memcopy/1", "MB/s")
        assert r["validated"] is True and r["summary"]["median"] > 100


def test_a_wrong_copy_is_caught():
    recs = records("memcopy", "--min-size", "4K", "--max-size", "4K", "--budget", "0.2", "--self-test-corrupt")
    assert recs[0]["validated"] is False


def test_bad_sizes_are_one_line_errors():
    for args, words in ((["--min-size", "0"], "greater than zero"), (["--max-size", "20000G"], "does not fit")):
        proc = node("memcopy", *args)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and words in proc.stderr, proc.stderr


def test_cli_stores_the_run(db):
    proc = run_cli("bench", "memcopy", "--quick", "--max-size", "256K", "--json", check=True)
    rec = json.loads(proc.stdout)
    assert rec["status"] == "ok" and rec["kind"] == "memcopy"
    from rmax.families import get

    s = get("memcopy").Summary.load(rec["summary"])
    assert s.points[0].bytes == 1024 and s.unit == "MB/s"
    # the sweep reaches 256K, or says the budget ended it (a loaded machine: 92672 bytes at load 10)
    assert s.sweep.sizes_measured == len(s.points)
    assert (s.points[-1].bytes == 256 * 1024) == (s.sweep.stopped_by != "budget"), s.sweep
    assert all(p.min <= p.median <= p.max for p in s.points)


def test_cli_bad_input():
    assert_one_line_error(run_cli("bench", "memcopy", "--max-size", "-1"), 2, "greater than zero")
    assert_one_line_error(run_cli("bench", "memcopy", "--max-size", "99999G"), 2, "does not fit")
    assert_one_line_error(run_cli("bench", "memcopy", "--min-size", "1M", "--max-size", "4K"), 2, "larger than")
