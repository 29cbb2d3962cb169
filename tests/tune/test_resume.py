"""Resume: a real `rmax tune` killed with SIGTERM mid-way continues with --resume, answering the
finished trials from the store instead of running them again; a resumed session whose node is lost
(three failed trials in a row) stops resumable, and the next resume runs the lost trials again.
(One session through both stops: its trials are what costs the time.)"""

import os
import signal
import subprocess
import sys
import time

from cliutil import ROOT, run_cli
from tuneutil import stored_runs as _runs

from rmax.tune.session import MIN_TRIALS

FINISHED = ("ok", "invalid", "failed")


def replayed(proc) -> list[str]:
    """The trials a resumed session answered from the store, as its table shows them."""
    return [l for l in proc.stdout.splitlines() if l.rstrip().endswith("  stored") or "stored stock" in l]


def test_sigterm_then_a_lost_node_each_resume_repeats_no_finished_trial(db, tmp_path):
    # An xhpl that fails while the "node" is down (a marker file), and is the real rmax-hpl while it is up.
    from rmax.native import executable

    down = tmp_path / "node-down"
    xhpl = tmp_path / "xhpl"
    xhpl.write_text(f"""#!/bin/sh
if [ -e {down} ]; then echo "node lost" >&2; exit 1; fi
exec {executable("rmax-hpl")} "$@"
""")
    xhpl.chmod(0o755)
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    args = ["tune", "--np", "2", "--n", "800", "--trials", str(MIN_TRIALS), "--engine", f"xhpl:{xhpl}",
            "--strategy", "coordinate", "--out", str(tmp_path / "best.dat")]
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
    assert proc.returncode == 143, err   # 128 + SIGTERM
    (tune,) = _runs(db, kind="tune")
    assert tune.status == "interrupted"
    assert "--resume" in err
    before = [r for r in _runs(db, kind="hpl", parent=tune.id) if r.status in FINISHED]
    assert 3 <= len(before) < MIN_TRIALS

    # The resumed session answers the finished trials from the store, then its node is lost.
    down.touch()
    first = run_cli("tune", "--resume", tune.id[:8], "--timeout", "300", timeout=120)
    assert first.returncode == 1, first.stderr
    assert "3 trials in a row failed" in first.stderr and "--resume" in first.stderr
    assert len(replayed(first)) == len(before)
    (tune,) = _runs(db, kind="tune")
    assert tune.status == "interrupted"
    lost = [r for r in _runs(db, kind="hpl", parent=tune.id) if r.status in FINISHED
            and r.id not in {b.id for b in before}]
    assert [r.status for r in lost] == ["failed"] * 3

    down.unlink()
    res = run_cli("tune", "--resume", tune.id[:8], timeout=120)
    assert res.returncode == 0, res.stderr
    (stored,) = _runs(db, kind="tune")
    assert stored.params["settings"]["timeout"] == 300   # the one setting a resume may change, kept
    assert len(replayed(res)) == len(before)                 # answered from the store, not run again
    assert stored.status == "ok"
    live = [r for r in _runs(db, kind="hpl", parent=tune.id) if r.status in FINISHED
            and r.id not in {x.id for x in lost}]
    past = stored.summary.get("trials_past_budget", 0)   # the confirmation may run past --trials, and says so
    assert len(live) == MIN_TRIALS + past and all(r.status == "ok" for r in live)   # the lost trials were run again
    assert [r.id for r in live[:len(before)]] == [r.id for r in before]      # no finished trial repeated
    # A finished session cannot be resumed again.
    again = run_cli("tune", "--resume", tune.id[:8])
    assert again.returncode == 2 and "already finished" in again.stderr
