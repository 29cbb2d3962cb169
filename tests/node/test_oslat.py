"""oslat: every test runs, checks its answers and reports in the right unit, pinned where it says;
a derived figure below its resolution is not shown as a number; the CLI stores a run."""

import json
import os
import subprocess

import pytest

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


def _ctxsw_record(label, samples, before, after, resolution):
    srt = sorted(samples)
    return {"schema": "rmax.oslat/1", "test": "ctxsw", "label": label, "unit": "us", "validated": True,
            "overhead_us": before, "overhead_after_us": after, "resolution_us": resolution, "cpus": [3],
            "procs": 2, "ws_bytes": 65536, "samples": samples,
            "summary": {"n": len(samples), "min": srt[0], "median": srt[len(srt) // 2], "max": srt[-1],
                        "mean": sum(samples) / len(samples)}}


def test_a_difference_at_or_below_its_resolution_is_unresolved_never_a_sample():
    from rmax.families.oslat import Oslat

    # the hop costs 2.7 us: 64K's laps straddle it (differences -0.2..0.9), 0K's are well above it
    below = _ctxsw_record("ctxsw 2p/64K", [2.5, 2.7004, 3.6], 2.7, 2.7, 0.03)
    above = _ctxsw_record("ctxsw 2p/0K", [1.10, 1.11, 1.16], 0.35, 0.37, 0.001)  # drift 0.02 us: the resolution
    parsed = Oslat().parse([below, above])
    assert parsed.status == "ok"
    r64, r0 = parsed.summary.results
    assert (r64.median, r64.min) == (None, None) and r64.max == pytest.approx(0.9)
    assert r64.mean == pytest.approx(0.2335, abs=1e-4)
    assert r0.overhead_us == pytest.approx(0.36) and r0.resolution_us == pytest.approx(0.02)
    assert r0.median == pytest.approx(0.75) and r0.min == pytest.approx(0.74)
    # what is stored: the laps as measured (hop included), never a difference below zero
    assert parsed.samples == {"ctxsw 2p/64K (hop included)": below["samples"],
                              "ctxsw 2p/0K (hop included)": above["samples"]}
    rows = {row[0]: row for row in Oslat().view(parsed.summary).tables[0].rows}
    assert rows["ctxsw 2p/64K"][1:4] == ["below resolution (< 0.03 us)"] * 2 + ["0.900"]
    assert rows["ctxsw 2p/0K"][1] == "0.750" and rows["ctxsw 2p/0K"][-1] == "CPU 3"
    assert [f.key for f in Oslat().metrics(parsed.summary)] == ["ctxsw 2p/0K"]  # no figure below resolution


def test_cli_stores_the_run(db):
    proc = run_cli("bench", "oslat", "--tests", "null,pipe,tcp,ctxsw", "--budget", "0.5", "--json", check=True)
    rec = json.loads(proc.stdout)
    assert rec["status"] == "ok" and rec["kind"] == "oslat"
    # no stored latency below zero: not a sample, not a summary value (an unresolved one is null)
    stored = [v for r in rec["summary"]["results"] for v in (r["median"], r["min"], r["max"], r["mean"])
              if v is not None]
    assert stored and min(stored) > 0 and min(v for vs in rec["samples"].values() for v in vs) > 0
    assert sum(1 for k in rec["samples"] if k.startswith("ctxsw") and k.endswith("(hop included)")) == 9
    from rmax.families import get

    s = get("oslat").Summary.load(rec["summary"])
    both = ["(2 CPUs)", "(1 CPU)"] if TWO_CPUS else ["(1 CPU)"]
    ctx = [f"ctxsw {p}p/{w}K" for p in (2, 8, 16) for w in (0, 16, 64)]
    assert [r.label for r in s.results] == (["null syscall"] + [f"pipe round trip {w}" for w in both] + ctx
                                            + [f"TCP round trip {w}" for w in both])
    # where each ran is in the stored summary: the pair on two CPUs, or both on one
    assert all(r.cpus and len(set(r.cpus)) == (2 if "2 CPUs" in r.label else 1) for r in s.results)
    assert [m.label for m in s.not_measured] == ([] if TWO_CPUS else ["pipe round trip (2 CPUs)",
                                                                       "TCP round trip (2 CPUs)"])
    assert rec["params"]["tests"] == ["null", "pipe", "tcp", "ctxsw"]
    assert all(f.better == "lower" and f.unit == "us" for f in get("oslat").metrics(s))
    assert rec["params"]["network"] == "127.0.0.1 only"


def test_cli_bad_input():
    assert_one_line_error(run_cli("bench", "oslat", "--tests", "warp"), 2, "unknown oslat test 'warp'")
    assert_one_line_error(run_cli("bench", "oslat", "--tests", "null,warp"), 2, "unknown oslat test 'warp'")
