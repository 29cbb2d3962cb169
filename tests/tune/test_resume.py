"""Resume: a real `rmax tune` killed with SIGTERM mid-way continues with --resume,
answering the finished trials from the store instead of running them again."""

import os
import signal
import subprocess
import sys
import time

from cliutil import ROOT, run_cli
from tuneutil import stored_runs as _runs

from rmax.tune.session import MIN_TRIALS

FINISHED = ("ok", "invalid", "failed")


def test_sigterm_then_resume_repeats_no_finished_trial(db, tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    args = ["tune", "--np", "2", "--n", "1000", "--trials", str(MIN_TRIALS), "--strategy", "coordinate",
            "--out", str(tmp_path / "best.dat")]
    proc = subprocess.Popen([sys.executable, "-m", "rmax", *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 90
    done = []
    while time.time() < deadline:
        time.sleep(0.3)
        tunes = _runs(db, kind="tune")
        if tunes:
            done = [r for r in _runs(db, kind="hpl", parent=tunes[0].id) if r.status in FINISHED]
            if len(done) >= 3:
                break
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    (tune,) = _runs(db, kind="tune")
    assert tune.status == "interrupted"
    assert "--resume" in err
    before = [r for r in _runs(db, kind="hpl", parent=tune.id) if r.status in FINISHED]
    assert 3 <= len(before) < MIN_TRIALS

    res = run_cli("tune", "--resume", tune.id[:8], "--timeout", "300", timeout=120)
    assert res.returncode == 0, res.stderr
    (stored,) = _runs(db, kind="tune")
    assert stored.params["settings"]["timeout"] == 300   # the one setting a resume may change, kept
    replayed = [l for l in res.stdout.splitlines() if l.rstrip().endswith("  stored") or "stored stock" in l]
    assert len(replayed) == len(before)                      # answered from the store, not run again
    (tune,) = _runs(db, kind="tune")
    assert tune.status == "ok"
    after = [r for r in _runs(db, kind="hpl", parent=tune.id) if r.status in FINISHED]
    assert len(after) == MIN_TRIALS                          # the budget, with no finished trial repeated
    assert [r.id for r in after[:len(before)]] == [r.id for r in before]
    # A finished session cannot be resumed again.
    again = run_cli("tune", "--resume", tune.id[:8])
    assert again.returncode == 2 and "already finished" in again.stderr


def test_lost_node_stops_the_session_resumable_and_resume_reruns_the_lost_trials(db, tmp_path):
    # An xhpl that fails while the "node" is down (a marker file), and is the real rmax-hpl
    # once it is back: three failures in a row stop the session as interrupted.
    from rmax.native import executable

    down = tmp_path / "node-down"
    down.touch()
    xhpl = tmp_path / "xhpl"
    xhpl.write_text(f"""#!/bin/sh
if [ -e {down} ]; then echo "node lost" >&2; exit 1; fi
exec {executable("rmax-hpl")} "$@"
""")
    xhpl.chmod(0o755)
    args = ["--np", "2", "--n", "800", "--trials", str(MIN_TRIALS), "--engine", f"xhpl:{xhpl}", "--strategy", "coordinate",
            "--out", str(tmp_path / "best.dat")]
    first = run_cli("tune", *args, timeout=120)
    assert first.returncode == 1, first.stderr
    assert "3 trials in a row failed" in first.stderr and "--resume" in first.stderr
    (tune,) = _runs(db, kind="tune")
    assert tune.status == "interrupted"
    lost = _runs(db, kind="hpl", parent=tune.id)
    assert [r.status for r in lost] == ["failed"] * 3

    down.unlink()
    res = run_cli("tune", "--resume", tune.id[:8], timeout=120)
    assert res.returncode == 0, res.stderr
    (tune,) = _runs(db, kind="tune")
    assert tune.status == "ok"
    live = [r for r in _runs(db, kind="hpl", parent=tune.id) if r.id not in {x.id for x in lost}]
    assert len(live) == MIN_TRIALS and all(r.status == "ok" for r in live)   # the lost trials were run again
