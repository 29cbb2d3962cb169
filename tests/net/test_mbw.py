"""mbw (concurrent pairs, OSU osu_mbw_mr's method): stored runs on 2 and 4 local ranks whose
figures agree with their own counts, validation that catches a damaged payload, bad input
refused before a run exists, and the family in the CLI, the survey and the report."""

import json
import statistics

import pytest
from cliutil import assert_one_line_error, run_cli
from netutil import mpirun

from rmax.families import get
from rmax.store import open_store

FAST = ["--quick", "--budget", "0.002", "--repeats", "3"]


def stored(db) -> list:
    with open_store(db) as store:
        return store.list(kind="mbw")


@pytest.mark.parametrize("ranks", [["--np", "2"], ["--np", "4", "--oversubscribe"]], ids=["2", "4"])
def test_runs_and_its_figures_agree_with_its_counts(db, ranks):
    proc = run_cli("bench", "mbw", *FAST, "--sizes", "1,100,4K", *ranks, "--json", timeout=120)
    assert proc.returncode == 0, proc.stderr
    rec = json.loads(proc.stdout)
    assert rec["status"] == "ok", rec.get("error")
    fam = get("mbw")
    (run,) = stored(db)
    s = fam.load(run)
    pairs = int(ranks[1]) // 2
    assert s.pairs == pairs and s.window == 64 and s.repeats == 3
    assert [p.size for p in s.points] == [1, 100, 4096]
    for p in s.points:
        assert p.validated and p.pairs == pairs and len(p.message_rate_repeats) == 3
        for rate, bw, iters, secs in zip(p.message_rate_repeats, p.bandwidth_repeats, p.iterations_repeats,
                                         p.seconds_repeats):
            assert iters > 0 and secs > 0
            assert rate == pytest.approx(pairs * 64 * iters / secs, rel=1e-9)
            assert bw == pytest.approx(rate * p.size, rel=1e-9)
        assert p.message_rate == pytest.approx(statistics.median(p.message_rate_repeats), rel=1e-9)
        assert p.bandwidth == pytest.approx(p.message_rate * p.size, rel=1e-9)
        assert p.iterations == sum(p.iterations_repeats)
        assert p.seconds == pytest.approx(sum(p.seconds_repeats), rel=1e-9)
    bw, rate = fam.headline(s)
    assert bw.key == "bandwidth.4096" and bw.value == pytest.approx(s.points[-1].bandwidth / 1e6)
    assert rate.key == "rate.1" and rate.value == pytest.approx(s.points[0].message_rate / 1e6)
    for f in (bw, rate):
        assert f.statistic == "median over repeats" and len(f.repeats) == 3
        assert f.value == pytest.approx(statistics.median(f.repeats))
    assert len(fam.metrics(s)) == 2 * len(s.points)


def test_validation_catches_a_damaged_payload(db):
    proc = run_cli("bench", "mbw", *FAST, "--sizes", "0,1,4099", "--self-test-corrupt", timeout=120)
    assert proc.returncode == 1 and "invalid" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    (run,) = stored(db)
    assert run.status == "invalid" and "1 B" in run.error and "4099 B" in run.error
    s = get("mbw").load(run)
    # A zero-byte message has no byte to damage: it stays valid, the others do not.
    assert [(p.size, p.validated) for p in s.points] == [(0, True), (1, False), (4099, False)]
    assert [f.key for f in get("mbw").headline(s)] == ["rate.0"]


@pytest.mark.parametrize("args, words", [
    (["--np", "3", "--oversubscribe"], ["even number of ranks", "not 3"]),
    (["--np", "1"], ["at least 2 ranks"]),
    (["--max-size", "2GiB"], ["--max-size", "1 GiB"]),
    (["--sizes", "8,2GiB"], ["--sizes", "1 GiB"]),
    (["--window", "0"], ["--window"]),
    (["--repeats", "1.5"], ["--repeats"]),
])
def test_bad_input_is_one_line_and_no_run(db, args, words):
    assert_one_line_error(run_cli("bench", "mbw", "--quick", *args), 2, *words)
    assert stored(db) == []


def test_native_command_refuses_an_odd_rank_count():
    proc = mpirun(3, "mbw", "--max-size", "8")
    assert proc.returncode != 0 and "mbw needs an even number of ranks (pairs), not 3" in proc.stderr
    assert not proc.stdout.strip()


def test_listed_in_bench_survey_and_its_report(db, tmp_path):
    assert "mbw" in run_cli("bench", "--help", check=True).stdout
    steps = run_cli("survey", "--list-steps", check=True).stdout
    assert any(line.split()[:1] == ["mbw"] for line in steps.splitlines()), steps
    rec = json.loads(run_cli("bench", "mbw", *FAST, "--max-size", "64", "--json", check=True, timeout=120).stdout)
    out = tmp_path / "report"
    run_cli("report", rec["id"], "--out", str(out), check=True)
    html = (out / "index.html").read_text()
    assert 'data-section="mbw"' in html and html.count('data-plot="mbw"') == 2
    rows = json.loads((out / "data" / "mbw.json").read_text())
    assert [r["size"] for r in rows] == [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64]
