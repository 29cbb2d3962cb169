"""stream: STREAM's rules are enforced and visible in the records; validation catches a wrong answer."""

import json

from cliutil import assert_one_line_error, run_cli
from node_helpers import check_measurement, node, records


def test_records_follow_streams_rules():
    recs = records("stream", "--size", "4M", "--budget", "0", "--threads", "2")
    assert [(r["kernel"], r["threads"]) for r in recs] == [
        (k, t) for t in (1, 2) for k in ("copy", "scale", "add", "triad")]
    for r in recs:
        check_measurement(r, "rmax.stream/1", "MB/s")
        assert r["validated"] is True
        assert r["repetitions"] >= 10 and r["summary"]["n"] == r["repetitions"] - 1  # first excluded
        assert r["best_mbs"] == r["summary"]["max"]
        assert r["bytes_per_element"] == (16 if r["kernel"] in ("copy", "scale") else 24)
        assert r["array_bytes"] == 4 * 2**20 and r["size_given"] is True
        assert r["rule_met"] is (r["array_bytes"] >= 4 * r["total_cache_bytes"])
        # each thread's own best (hpcc StarSTREAM's per-process view) next to the aggregate
        assert len(r["thread_best_mbs"]) == r["threads"]
        assert abs(r["thread_best_mean_mbs"] - sum(r["thread_best_mbs"]) / r["threads"]) < 1e-6 * r["best_mbs"]


def test_a_wrong_answer_is_caught():
    recs = records("stream", "--size", "1M", "--budget", "0", "--mode", "one", "--self-test-corrupt")
    assert recs and all(r["validated"] is False for r in recs)


def test_the_check_holds_over_many_repetitions():
    # STREAM's scalar 3 grows the arrays 15x a repetition: a spoilt element fell below the tolerance
    # after ~12 repetitions and every value was infinite (so anything passed) after 263
    args = ("stream", "--size", "16K", "--budget", "0", "--mode", "one", "--ntimes", "400")
    assert all(r["validated"] is False for r in records(*args, "--self-test-corrupt"))
    assert all(r["validated"] is True and r["repetitions"] == 400 for r in records(*args))


def test_bad_sizes_are_one_line_errors():
    for args, words in ((["--size", "0"], "greater than zero"), (["--size", "-8M"], "not a size"),
                        (["--size", "1000G"], "does not fit"), (["--ntimes", "3"], "out of range")):
        proc = node("stream", *args)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and words in proc.stderr, proc.stderr


def test_cli_stores_the_run(db):
    proc = run_cli("bench", "stream", "--size", "2MiB", "--budget", "0", "--json", check=True)
    rec = json.loads(proc.stdout)
    assert rec["status"] == "ok" and rec["kind"] == "stream"
    assert rec["summary"]["schema"] == "rmax.stream/2"
    triad = next(r for r in rec["summary"]["results"] if r["kernel"] == "triad" and r["threads"] == 1)
    assert triad["best"] >= triad["median"] > 100
    assert rec["summary"]["statistic"].startswith("best")


def test_cli_marks_an_invalid_run(db):
    # the kernel's own check failing is an 'invalid' run (stored) and exit status 1
    from rmax.families import get
    from rmax.native import executable

    argv = [executable("rmax-node"), "stream", "--json", "-", "--size", "1M", "--budget", "0", "--mode", "one",
            "--self-test-corrupt"]
    from rmax.bench.node_kernel import run_node

    rec = run_node("stream", argv, {}, get("stream").parse)
    assert rec.status == "invalid" and "validation failed" in rec.error


def test_cli_bad_input():
    assert_one_line_error(run_cli("bench", "stream", "--size", "0"), 2, "greater than zero")
    assert_one_line_error(run_cli("bench", "stream", "--size", "-1M"), 2, "greater than zero")
    assert_one_line_error(run_cli("bench", "stream", "--size", "10000G"), 2, "does not fit")
