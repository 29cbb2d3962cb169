"""Helpers for the agent tests: start `rmax agent run` as a real process, read its endpoint, stop it
with SIGTERM, wait for conditions, and slow a process down on purpose."""

from __future__ import annotations

import json
import os
import secrets
import select
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def env_for(db: Path | str) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), env.get("PYTHONPATH")]))
    env["RMAX_DB"] = str(db)
    return env


class Agent:
    """`rmax agent run ARGS` in a process of its own (after `prefix`, e.g. nsenter into a node)."""

    def __init__(self, db: Path | str, *args: str, prefix: list[str] | None = None, on_start=None):
        self.db = db
        self.proc = subprocess.Popen([*(prefix or []), sys.executable, "-m", "rmax", "agent", "run", *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env_for(db),
                                     preexec_fn=on_start)
        self.lines: list[str] = []
        first = self.readline(60)
        if "metrics at " not in first:
            self.stop()
            raise AssertionError(f"agent did not start: {first!r} {self.proc.stderr.read()}")
        self.url = first.split("metrics at ", 1)[1].split("/metrics", 1)[0]

    def readline(self, timeout: float) -> str:
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        line = self.proc.stdout.readline() if ready else ""
        self.lines.append(line)
        return line

    def rates(self) -> dict:
        with urllib.request.urlopen(self.url + "/rates.json", timeout=10) as r:
            return json.loads(r.read())

    def stop(self, timeout: float = 30) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError("the agent did not stop within 30 s of SIGTERM")
        return self.proc.returncode

    def output(self) -> str:
        rest = self.proc.stdout.read() if self.proc.poll() is not None else ""
        return "".join(self.lines) + rest


def wait_for(predicate, timeout: float, what: str, period: float = 0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(period)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def runs(db: Path | str) -> list[dict]:
    """Every stored run, read without opening the store through rmax (which would reap orphans)."""
    import sqlite3

    if not Path(db).exists():
        return []
    con = sqlite3.connect(str(db), timeout=30)
    con.row_factory = sqlite3.Row
    try:
        return [dict(r) for r in con.execute("SELECT id, kind, status, error, label FROM runs ORDER BY started_at")]
    finally:
        con.close()


def spin(cpu: int | None = None) -> subprocess.Popen:
    """A process that burns a CPU (pinned to `cpu` with taskset when given)."""
    argv = ["sh", "-c", "while :; do :; done"]
    return subprocess.Popen((["taskset", "-c", str(cpu)] if cpu is not None else []) + argv)


def stop_all(procs) -> None:
    for p in procs:
        p.kill()
    for p in procs:
        p.wait()


class CpuQuota:
    """A cgroup whose processes share `fraction` of one CPU (cgroup v1 cpu controller or v2 cpu.max),
    enforced every 10 ms so that even millisecond-scale timed blocks see it."""

    PERIOD_US = 10_000

    def __init__(self, fraction: float):
        name = "rmax-test-" + secrets.token_hex(3)
        quota = int(self.PERIOD_US * fraction)
        v1 = Path("/sys/fs/cgroup/cpu")
        if (v1 / "cpu.cfs_quota_us").exists():
            self.path = v1 / name
            self.path.mkdir()
            (self.path / "cpu.cfs_period_us").write_text(str(self.PERIOD_US))
            (self.path / "cpu.cfs_quota_us").write_text(str(quota))
        else:
            self.path = Path("/sys/fs/cgroup") / name
            self.path.mkdir()
            (self.path / "cpu.max").write_text(f"{quota} {self.PERIOD_US}")

    @staticmethod
    def available() -> bool:
        if os.geteuid() != 0:
            return False
        v2 = Path("/sys/fs/cgroup/cgroup.subtree_control")
        return Path("/sys/fs/cgroup/cpu/cpu.cfs_quota_us").exists() or (v2.exists() and "cpu" in v2.read_text())

    def enter(self) -> None:
        """Move the calling process in (for preexec_fn: the agent starts inside)."""
        (self.path / "cgroup.procs").write_text(str(os.getpid()))

    def remove(self) -> None:
        for _ in range(50):   # the processes must be gone first
            try:
                self.path.rmdir()
                return
            except OSError:
                time.sleep(0.1)
