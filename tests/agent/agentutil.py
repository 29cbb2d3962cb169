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

from cpucap import set_cap

ROOT = Path(__file__).resolve().parents[2]


def env_for(db: Path | str) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), env.get("PYTHONPATH")]))
    env["RMAX_DB"] = str(db)
    env["PYTHONFAULTHANDLER"] = "1"     # SIGABRT prints every thread's stack: where a stop hung
    return env


class Agent:
    """`rmax agent run ARGS` in a process of its own (after `prefix`, e.g. nsenter into a node)."""

    def __init__(self, db: Path | str, *args: str, prefix: list[str] | None = None, on_start=None):
        self.db = db
        self.proc = subprocess.Popen([*(prefix or []), sys.executable, "-m", "rmax", "agent", "run", *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env_for(db),
                                     preexec_fn=on_start)
        self.lines: list[str] = []
        self.terminated = False
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

    def terminate(self) -> None:
        """SIGTERM, once (a second one would interrupt the agent's own clean-up): several agents can
        then stop at once, and stop() waits for each."""
        if not self.terminated and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        self.terminated = True

    def stop(self, timeout: float = 30) -> int:
        self.terminate()
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.send_signal(signal.SIGABRT)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            stacks = self.proc.stderr.read()[-4000:]
            raise AssertionError(f"the agent did not stop within {timeout:g} s of SIGTERM; its stacks:\n{stacks}")
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


class CpuBudget:
    """A cgroup (v1 cpu controller, or v2) for a node's processes: a high weight, so that the
    machine's other work (a test machine may be shared) leaves its CPU time alone and its rates are the
    core's own, and a cap, `limit(fraction)` of one CPU enforced every 10 ms so that even timed
    blocks of milliseconds see it: a node with a smaller CPU budget. (Competing processes are no
    sure slow-down here: with autogroup scheduling each session gets its own share.)"""

    PERIOD_US = 10_000
    HIGH_WEIGHT = {"cpu.shares": "262144", "cpu.weight": "10000"}     # each controller's largest

    def __init__(self, fraction: float | None = None, period_us: int = PERIOD_US):
        self.period_us = period_us
        name = "rmax-test-" + secrets.token_hex(3)
        v1 = Path("/sys/fs/cgroup/cpu")
        self.v1 = (v1 / "cpu.cfs_quota_us").exists()
        self.path = (v1 if self.v1 else Path("/sys/fs/cgroup")) / name
        self.path.mkdir()
        knob = "cpu.shares" if self.v1 else "cpu.weight"
        (self.path / knob).write_text(self.HIGH_WEIGHT[knob])
        self.limit(fraction)

    def limit(self, fraction: float | None) -> None:
        """Cap the group at `fraction` of one CPU (None: no cap)."""
        set_cap(self.path, fraction, self.period_us)

    @staticmethod
    def available() -> bool:
        if os.geteuid() != 0:
            return False
        v2 = Path("/sys/fs/cgroup/cgroup.subtree_control")
        return Path("/sys/fs/cgroup/cpu/cpu.cfs_quota_us").exists() or (v2.exists() and "cpu" in v2.read_text())

    def enter(self) -> None:
        """Move the calling process in (as preexec_fn: the agent and every probe it starts are inside)."""
        (self.path / "cgroup.procs").write_text(str(os.getpid()))

    def remove(self) -> None:
        for _ in range(100):   # the processes must be gone first
            try:
                self.path.rmdir()
                return
            except OSError:
                time.sleep(0.1)
