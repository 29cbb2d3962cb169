"""`rmax tune` end to end on this machine: real engines at small N, bad input, invalid trials."""

import json

from cliutil import assert_one_line_error, run_cli
from tuneutil import stored_runs as _runs




def test_short_real_session(db, tmp_path):
    out = tmp_path / "best.dat"
    proc = run_cli("tune", "--np", "2", "--n", "1000", "--trials", "4", "--engine", "rmax", "--strategy", "coordinate",
                   "--out", str(out), timeout=120)
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    for col in ("#", "N", "NB", "P x Q", "T/V", "BLAS", "% Rpeak", "GFLOPS", "Time (s)", "vs start"):
        assert col in text
    assert "stock HPL.dat (start)" in text and "with the stock HPL.dat to" in text
    assert "best HPL.dat written to" in text
    from rmax.hpl.dat import read

    cfg = read(out)
    assert len(list(cfg.tests())) == 1 and cfg.max_ranks == 2
    (tune,) = _runs(db, kind="tune")
    assert tune["status"] == "ok"
    trials = _runs(db, kind="hpl", parent=tune["id"])
    assert len(trials) == 4 and all(t["status"] == "ok" for t in trials)
    summary = json.loads(tune["summary"])
    assert summary["best"]["gflops"] > 0 and summary["trials"] == 4
    # No DGEMM was stored: the session ran a k sweep first, under itself, and seeded NB from it,
    # then HPL's trailing-update shape for its bound.
    # The best's bound is at its own trailing-update shape (measured again at the end if its NB or grid differ).
    from rmax.bench.dgemm import hpl_update_shape

    sweep, *shapes = _runs(db, kind="dgemm", parent=tune["id"])
    assert sweep["status"] == "ok" and len(json.loads(sweep["summary"])["k"]) >= 4
    assert f"{sweep['id'][:8]}" in text and "which this session ran first" in text
    assert shapes and shapes[0]["started_at"] < trials[0]["started_at"]
    (cited,) = [r for r in shapes if r["id"][:8] in summary["dgemm_source"]]
    (point,) = json.loads(cited["summary"])["shape"]
    b = summary["best"]
    assert (point["m"], point["n"], point["k"]) == hpl_update_shape(b["n"], b["nb"], *b["grid"])
    assert f"at m={point['m']} n={point['n']} k={point['k']}" in summary["dgemm_source"]
    assert abs(summary["dgemm_bound_gflops"] - 2 * point["median"]) < 1e-9
    # The steps table (Table 1 of the Kronos article): the start, then each decided duel.
    steps = summary["steps"]
    assert "Step  Change" in text and steps[0]["change"] == "stock HPL.dat (the start)" and steps[0]["n"] == 1000
    assert all(x["significant"] for x in steps if x["kept"] and x["gain_pct"] is not None)


def test_invalid_trials_are_never_best(db, tmp_path):
    # A threshold of 1e-30 makes every residual check FAIL: every trial is invalid.
    out = tmp_path / "best.dat"
    proc = run_cli("tune", "--np", "2", "--n", "600", "--trials", "3", "--threshold", "1e-30", "--out", str(out),
                   timeout=120)
    assert_one_line_error(proc, 1, "no valid trial", "invalid, 0 failed")
    assert not out.exists()
    (tune,) = _runs(db, kind="tune")
    assert tune["status"] == "failed"
    assert json.loads(tune["summary"])["best"] is None
    assert all(t["status"] == "invalid" for t in _runs(db, kind="hpl", parent=tune["id"]))


def test_hung_trial_is_killed_by_the_watchdog_and_recorded_failed(db, tmp_path):
    # An xhpl that hangs on its first execution (both ranks: one sleeps, the other waits for it
    # inside MPI) and is the real rmax-hpl afterwards: a node that stalled once.
    from rmax.native import executable

    marker = tmp_path / "hung-once"
    xhpl = tmp_path / "xhpl"
    xhpl.write_text(f"""#!/bin/sh
if mkdir {marker} 2>/dev/null; then exec sleep 600; fi
exec {executable("rmax-hpl")} "$@"
""")
    xhpl.chmod(0o755)
    proc = run_cli("tune", "--np", "2", "--n", "800", "--trials", "3", "--engine", f"xhpl:{xhpl}",
                   "--strategy", "coordinate", "--timeout", "8", "--out", str(tmp_path / "best.dat"), timeout=180)
    assert proc.returncode == 0, proc.stderr
    (tune,) = _runs(db, kind="tune")
    trials = _runs(db, kind="hpl", parent=tune["id"])
    assert len(trials) == 3
    assert trials[0]["status"] == "failed", trials[0]
    assert "timed out" in trials[0]["error"] and "killed" in trials[0]["error"], trials[0]["error"]
    assert all(t["status"] == "ok" for t in trials[1:])
    summary = json.loads(tune["summary"])
    assert summary["best"]["gflops"] > 0 and summary["trials"] == 3
    import subprocess

    assert subprocess.run(["pgrep", "-f", "sleep 600"], capture_output=True).returncode == 1   # nothing left behind


def test_bad_input(db):
    assert_one_line_error(run_cli("tune", "--np", "2", "--mem-fraction", "0.99", "--trials", "3"), 2,
                          "--mem-fraction 0.99", "swap")
    assert_one_line_error(run_cli("tune", "--np", "2", "--mem-fraction", "1.5"), 2, "--mem-fraction")
    assert_one_line_error(run_cli("tune", "--np", "2", "--n", "1000", "--trials", "1"), 2, "--trials 1 is too small")
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
