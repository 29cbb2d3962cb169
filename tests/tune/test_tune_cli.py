"""`rmax tune` end to end on this machine: real engines at small N, bad input, invalid trials."""

from cliutil import assert_one_line_error, run_cli
from tuneutil import stored_runs as _runs




def test_real_session_survives_a_hung_first_trial(db, tmp_path):
    # An xhpl that hangs on its first execution (both ranks: one sleeps, the other waits for it
    # inside MPI) and is the real rmax-hpl afterwards: a node that stalled once. The watchdog kills
    # it, the trial is run once more, and the session goes on to the end (one real session covers
    # the table, the retry, the DGEMM seeding, the steps and the confirmation at full N).
    from rmax.native import executable
    from rmax.tune.session import CONFIRM_PAIRS, MIN_TRIALS

    marker = tmp_path / "hung-once"
    xhpl = tmp_path / "xhpl"
    xhpl.write_text(f"""#!/bin/sh
if mkdir {marker} 2>/dev/null; then exec sleep 600; fi
exec {executable("rmax-hpl")} "$@"
""")
    xhpl.chmod(0o755)
    out = tmp_path / "best.dat"
    proc = run_cli("tune", "--np", "2", "--n", "800", "--trials", str(MIN_TRIALS), "--engine", f"xhpl:{xhpl}",
                   "--strategy", "coordinate", "--timeout", "5", "--out", str(out), timeout=240)
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    for col in ("#", "N", "NB", "P x Q", "T/V", "BLAS", "% Rpeak", "GFLOPS", "Time (s)", "vs start"):
        assert col in text
    assert "trial 1 failed: running it once more" in text and "stock HPL.dat (start)" in text
    assert "with the stock HPL.dat" in text and "best HPL.dat written to" in text
    assert "not searched, 1x2: pmap R = C" in text and "memory's N is" in text
    from rmax.hpl.dat import read

    cfg = read(out)
    assert len(list(cfg.tests())) == 1 and cfg.max_ranks == 2
    (tune,) = _runs(db, kind="tune")
    assert tune.status == "ok"
    trials = _runs(db, kind="hpl", parent=tune.id)
    # the confirmation's block always runs whole: a stock run outside its band takes one more, past --trials
    past = tune.summary.get("trials_past_budget", 0)
    assert len(trials) == MIN_TRIALS + past
    assert trials[0].status == "failed", trials[0]
    assert "timed out" in trials[0].error and "killed" in trials[0].error, trials[0].error
    assert all(t.status == "ok" for t in trials[1:])
    summary = tune.summary
    assert summary["trials"] == MIN_TRIALS + past and summary["retried_failures"] == 1
    b = summary["best"]
    assert b["gflops"] > 0 and b["n"] == 800 and b["hpl_dat"] == str(out.resolve())
    # The figure: the median of the chosen configuration's runs in the confirmation block at full N.
    conf = summary["confirmation"]
    assert len(conf["stock_runs"]) >= CONFIRM_PAIRS or conf["note"]
    if b["interval"]:
        assert b["interval"][0] <= b["gflops"] <= b["interval"][1]
    # No DGEMM was stored: the session ran a k sweep first, under itself, and seeded NB from it,
    # then HPL's trailing-update shape for its bound; the best's bound is at its own shape.
    from rmax.families.dgemm import hpl_update_shape

    sweep, *shapes = _runs(db, kind="dgemm", parent=tune.id)
    assert sweep.status == "ok" and len(sweep.summary["k"]) >= 4
    assert f"{sweep.id[:8]}" in text and "which this session ran first" in text
    assert shapes and shapes[0].started_at < trials[0].started_at
    (cited,) = [r for r in shapes if r.id[:8] in summary["dgemm_source"]]
    (point,) = cited.summary["shape"]
    assert (point["m"], point["n"], point["k"]) == hpl_update_shape(b["n"], b["nb"], *b["grid"])
    assert abs(summary["dgemm_bound_gflops"] - 2 * point["median"]) < 1e-9
    # The steps table: the start, then each block; what was kept was better in pairs.
    steps = summary["steps"]
    assert "Step  Change" in text and steps[0]["change"] == "stock HPL.dat (the start)" and steps[0]["n"] == 800
    assert all(x["significant"] for x in steps if x["kept"] and x["gain_pct"] is not None)
    import subprocess

    assert subprocess.run(["pgrep", "-f", "sleep 600"], capture_output=True).returncode == 1   # nothing left behind


def test_invalid_trials_are_never_best(db, tmp_path):
    # A threshold of 1e-30 makes every residual check FAIL: every trial is invalid.
    from rmax.tune.session import MIN_TRIALS

    out = tmp_path / "best.dat"
    proc = run_cli("tune", "--np", "2", "--n", "600", "--trials", str(MIN_TRIALS), "--threshold", "1e-30",
                   "--out", str(out), timeout=120)
    assert_one_line_error(proc, 1, "no valid trial", "invalid, 0 failed")
    assert not out.exists()
    (tune,) = _runs(db, kind="tune")
    assert tune.status == "failed"
    assert tune.summary["best"] is None
    assert all(t.status == "invalid" for t in _runs(db, kind="hpl", parent=tune.id))


def test_bad_input(db):
    assert_one_line_error(run_cli("tune", "--np", "2", "--mem-fraction", "0.99", "--trials", "3"), 2,
                          "--mem-fraction 0.99", "swap")
    assert_one_line_error(run_cli("tune", "--np", "2", "--mem-fraction", "1.5"), 2, "--mem-fraction")
    assert_one_line_error(run_cli("tune", "--np", "2", "--n", "1000", "--trials", "14"), 2, "--trials 14 is too small")
    assert_one_line_error(run_cli("tune", "--np", "2", "--n", "20000", "--budget", "5s"), 2,
                          "too small for one trial")
    assert_one_line_error(run_cli("tune", "--np", "2", "--budget", "soon"), 2, "not a duration")
    assert_one_line_error(run_cli("tune", "--np", "2", "--trials", "3", "--engine", "xhpl:/nonexistent/xhpl"), 2,
                          "not an executable file")
    assert_one_line_error(run_cli("tune", "--np", "2", "--trials", "3", "--engine", "linpack"), 2, "unknown HPL engine")
    assert_one_line_error(run_cli("tune", "--resume", "0123abcd"), 2, "no run with id")
    # a resumed session keeps its settings: other options are refused, not silently ignored
    assert_one_line_error(run_cli("tune", "--resume", "0123abcd", "--np", "1", "--engine", "hpcc"), 2,
                          "--resume continues a session with its stored settings: --engine, --np cannot change them")
    assert_one_line_error(run_cli("tune", "--resume", "0123abcd", "--timeout", "600"), 2, "no run with id")
    assert not _runs(db)       # nothing was started, not even the session's own DGEMM sweep


def test_high_mem_fraction_warns_with_force(db):
    # Accepted with --force but warned about; the budget check then refuses this huge --n in one line.
    proc = run_cli("tune", "--np", "2", "--mem-fraction", "0.97", "--force", "--n", "40000", "--budget", "1m")
    assert "may swap" in proc.stderr and proc.returncode == 2 and "too small for one trial" in proc.stderr
    assert not _runs(db)
