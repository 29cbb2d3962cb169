"""oslat: every test runs, checks its answers and reports in the right unit, pinned where it says;
a derived figure below its resolution is not shown as a number; the CLI stores a run."""

import json
import os
import subprocess

from rmax.native import executable

from cliutil import assert_one_line_error, run_cli
from node_helpers import check_measurement, node, records


TWO_CPUS = len(os.sched_getaffinity(0)) >= 2


def test_every_test_reports_validated_results():
    recs = [r for r in records("oslat", "--budget", "3", "--sample-time", "0.0005", timeout=120)
            if r["schema"] == "rmax.oslat/1"]
    labels = [r["label"] for r in recs]
    assert labels[:7] == ["null syscall", "stat", "open/close", "signal install", "signal catch", "fork+exit",
                          "fork+exec /bin/true"]
    ctx = [(r["procs"], r["ws_bytes"]) for r in recs if r["test"] == "ctxsw"]
    assert ctx == [(p, w) for p in (2, 8, 16) for w in (0, 16384, 65536)]
    both = ["(2 CPUs)", "(1 CPU)"] if TWO_CPUS else ["(1 CPU)"]
    line = ["cache-line round trip (2 CPUs)"] if TWO_CPUS else []
    assert labels[-2 - 2 * len(both) - len(line):] == [f"{t} round trip {w}" for t in ("UDP", "TCP") for w in both] + [
        "TCP connect", "TCP bandwidth"] + line
    for r in recs:
        check_measurement(r, "rmax.oslat/1", "MB/s" if r["test"] == "tcp-bw" else "us")
        assert r["validated"] is True, r["label"]
    allowed = os.sched_getaffinity(0)
    for r in recs:  # every process pinned to a named, allowed CPU: a ring's on one, a 1-CPU pair's on one,
        # a 2-CPU pair's and the TCP servers' (when there are two) on a second
        two = r["label"].endswith("(2 CPUs)") or (TWO_CPUS and r["test"] in ("tcp-connect", "tcp-bw"))
        assert r["cpus"] and set(r["cpus"]) <= allowed and len(set(r["cpus"])) == (2 if two else 1), r
    byname = {r["test"]: r["summary"]["median"] for r in recs}
    # orders of magnitude any Linux node respects: a system call is cheaper than a fork, a fork than an exec
    assert byname["null"] < byname["fork-exit"] < byname["fork-exec"]
    assert byname["tcp-bw"] > 10  # MB/s over loopback
    if TWO_CPUS:  # no system call in it: far below a pipe's round trip between the same two CPUs
        assert byname["cacheline"] < min(r["summary"]["min"] for r in recs if r["label"] == "pipe round trip (2 CPUs)")


def test_unknown_test_is_a_one_line_error():
    proc = node("oslat", "--tests", "null,warp")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "unknown test 'warp'" in proc.stderr


def test_one_allowed_cpu_says_the_two_cpu_figure_cannot_be_measured():
    cpu = min(os.sched_getaffinity(0))
    proc = subprocess.run([executable("rmax-node"), "oslat", "--tests", "pipe,cacheline", "--budget", "0.3", "--json",
                           "-"],
                          capture_output=True, text=True, timeout=60, preexec_fn=lambda: os.sched_setaffinity(0, {cpu}))
    assert proc.returncode == 0, proc.stderr
    recs = [json.loads(line) for line in proc.stdout.splitlines()]
    skipped = [r for r in recs if r["schema"] == "rmax.oslat.not_measured/1"]
    assert [r["label"] for r in skipped] == ["pipe round trip (2 CPUs)", "cache-line round trip (2 CPUs)"]
    assert all("only one CPU" in r["why"] for r in skipped)
    (one,) = [r for r in recs if r["schema"] == "rmax.oslat/1"]
    assert one["label"] == "pipe round trip (1 CPU)" and one["cpus"] == [cpu, cpu] and one["validated"]


def test_a_derived_figure_below_its_resolution_is_no_number():
    from rmax.bench.oslat import Oslat, OslatSummary, OsResult

    below = OsResult("ctxsw 2p/64K", "ctxsw", "us", 0.0004, -0.2, 0.9, 0.1, 50, 2, 65536, 2.7, 0.03, [3])
    above = OsResult("ctxsw 2p/0K", "ctxsw", "us", 0.75, 0.74, 0.8, 0.76, 50, 2, 0, 0.36, 0.001, [3])
    s = OslatSummary([below, above])
    rows = {row[0]: row for row in Oslat().view(s).tables[0].rows}
    assert rows["ctxsw 2p/64K"][1:4] == ["below resolution (< 0.03 us)"] * 2 + ["0.900"]
    assert rows["ctxsw 2p/0K"][1] == "0.750" and rows["ctxsw 2p/0K"][-1] == "CPU 3"
    assert [f.key for f in Oslat().metrics(s)] == ["ctxsw 2p/0K"]  # no figure to compare below resolution


def test_cli_stores_the_run(db):
    proc = run_cli("bench", "oslat", "--tests", "null,pipe,tcp", "--budget", "0.5", "--json", check=True)
    rec = json.loads(proc.stdout)
    assert rec["status"] == "ok" and rec["kind"] == "oslat"
    from rmax.bench.family import get

    s = get("oslat").Summary.load(rec["summary"])
    both = ["(2 CPUs)", "(1 CPU)"] if TWO_CPUS else ["(1 CPU)"]
    assert [r.label for r in s.results] == ["null syscall"] + [f"{t} round trip {w}" for t in ("pipe", "TCP")
                                                               for w in both]
    # where each ran is in the stored summary: the pair on two CPUs, or both on one
    assert all(r.cpus and len(set(r.cpus)) == (2 if "2 CPUs" in r.label else 1) for r in s.results)
    assert [m.label for m in s.not_measured] == ([] if TWO_CPUS else ["pipe round trip (2 CPUs)",
                                                                       "TCP round trip (2 CPUs)"])
    assert rec["params"]["tests"] == ["null", "pipe", "tcp"]
    assert all(f.better == "lower" and f.unit == "us" for f in get("oslat").metrics(s))
    assert rec["params"]["network"] == "127.0.0.1 only"


def test_cli_bad_input():
    assert_one_line_error(run_cli("bench", "oslat", "--tests", "warp"), 2, "unknown oslat test 'warp'")
    assert_one_line_error(run_cli("bench", "oslat", "--tests", "null,warp"), 2, "unknown oslat test 'warp'")
