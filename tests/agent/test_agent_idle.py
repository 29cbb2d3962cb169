"""What the agent counts as load, and a Slurm that is installed but not configured. About 3 s."""

from __future__ import annotations

import os
import shutil
import signal
import statistics
import subprocess
import time
from pathlib import Path

import pytest

from agentutil import stop_all

from rmax.agent.idle import SlurmCheck, foreign_runnable


def mean_load(seconds: float = 0.5) -> float:
    samples = []
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        samples.append(foreign_runnable())
        time.sleep(0.05)
    return statistics.mean(samples)


def in_session(sid: int) -> int:
    """Processes in session sid."""
    n = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            n += int(stat.read_text().rsplit(")", 1)[1].split()[3]) == sid
        except (OSError, IndexError, ValueError):
            continue
    return n


def test_other_processes_count_and_our_own_sessions_do_not():
    # Sixteen spinning processes, so that the count stands out of the shared machine's own load (by
    # twice the margin asked: half a second of samples, 10 of them, tells 16 from 0).
    base = mean_load()
    # Our own probes run in sessions we lead: spinning ones add nothing to the load we see...
    own = [subprocess.Popen(["sh", "-c", "while :; do :; done"], start_new_session=True) for _ in range(16)]
    try:
        with_own = mean_load()
    finally:
        stop_all(own)
    # ...while the same in a session of another process's add one each.
    out = subprocess.run(["sh", "-c", "setsid sh -c 'for i in $(seq 16); do (while :; do :; done) & done; wait' "
                          ">/dev/null 2>&1 & echo $!"], capture_output=True, text=True, check=True).stdout
    leader = int(out)
    try:
        deadline = time.monotonic() + 10
        while in_session(leader) < 17 and time.monotonic() < deadline:   # the shell and its 16 spinners
            time.sleep(0.02)
        with_others = mean_load()
    finally:
        os.killpg(leader, signal.SIGKILL)
    assert with_own < base + 8 < with_others, (base, with_own, with_others)


@pytest.mark.skipif(not shutil.which("squeue") or Path("/etc/slurm/slurm.conf").exists(),
                    reason="needs squeue installed without a Slurm configuration")
def test_slurm_installed_but_not_configured():
    auto = SlurmCheck("auto")
    assert auto.jobs() == ([], None) and "not configured" in auto.absent
    jobs, busy = SlurmCheck("on").jobs()      # told Slurm is in use: a squeue that cannot answer means busy
    assert jobs == [] and busy
    assert SlurmCheck("off").jobs() == ([], None)
