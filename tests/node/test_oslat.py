"""oslat: every test runs, checks its answers and reports in the right unit; the CLI stores a run."""

import json

from cliutil import assert_one_line_error, run_cli
from node_helpers import check_measurement, node, records


def test_every_test_reports_validated_results():
    recs = records("oslat", "--budget", "3", "--sample-time", "0.0005", timeout=120)
    labels = [r["label"] for r in recs]
    assert labels[:7] == ["null syscall", "stat", "open/close", "signal install", "signal catch", "fork+exit",
                          "fork+exec /bin/true"]
    ctx = [(r["procs"], r["ws_bytes"]) for r in recs if r["test"] == "ctxsw"]
    assert ctx == [(p, w) for p in (2, 8, 16) for w in (0, 16384, 65536)]
    assert labels[-4:] == ["UDP round trip", "TCP round trip", "TCP connect", "TCP bandwidth"]
    for r in recs:
        check_measurement(r, "rmax.oslat/1", "MB/s" if r["test"] == "tcp-bw" else "us")
        assert r["validated"] is True, r["label"]
    byname = {r["test"]: r["summary"]["median"] for r in recs}
    # orders of magnitude any Linux node respects: a system call is cheaper than a fork, a fork than an exec
    assert byname["null"] < byname["fork-exit"] < byname["fork-exec"]
    assert byname["tcp-bw"] > 10  # MB/s over loopback


def test_unknown_test_is_a_one_line_error():
    proc = node("oslat", "--tests", "null,warp")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "unknown test 'warp'" in proc.stderr


def test_cli_stores_the_run(db):
    proc = run_cli("bench", "oslat", "--tests", "null,pipe,tcp", "--budget", "0.5", "--json", check=True)
    rec = json.loads(proc.stdout)
    assert rec["status"] == "ok" and rec["kind"] == "oslat"
    from rmax.bench.family import get

    s = get("oslat").Summary.load(rec["summary"])
    assert [r.label for r in s.results] == ["null syscall", "pipe round trip", "TCP round trip"]
    assert rec["params"]["tests"] == ["null", "pipe", "tcp"]
    assert all(f.better == "lower" and f.unit == "us" for f in get("oslat").metrics(s))
    assert rec["params"]["network"] == "127.0.0.1 only"


def test_cli_bad_input():
    assert_one_line_error(run_cli("bench", "oslat", "--tests", "warp"), 2, "unknown oslat test 'warp'")
    assert_one_line_error(run_cli("bench", "oslat", "--tests", "null,warp"), 2, "unknown oslat test 'warp'")
