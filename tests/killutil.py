"""Killing rmax mid-run and looking for what survived it: shared by tests/test_kill.py and
bench/robustness (which also runs it against another checkout, to measure before and after)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _processes() -> dict[int, tuple[int, str, bytes]]:
    """pid -> (parent pid, start time, command line) of every live process."""
    out = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
                cmd = Path(f"/proc/{entry}/cmdline").read_bytes()
            except (OSError, IndexError):
                continue
            if fields[0] != "Z":
                out[int(entry)] = (int(fields[1]), fields[19], cmd)
    return out


def _tree(root: int) -> dict[int, tuple[int, str, bytes]]:
    procs = _processes()
    tree, todo = {}, [root]
    while todo:
        parent = todo.pop()
        for pid, info in procs.items():
            if info[0] == parent and pid not in tree:
                tree[pid] = info
                todo.append(pid)
    return tree


def kill_rmax_midway(args: list[str], env: dict, kernel: str, ranks: int, timeout: float = 60,
                     root: Path = ROOT, python: str = sys.executable) -> tuple[dict, list]:
    """kill_midway of `rmax ARGS`, the rmax of the checkout at root."""
    return kill_midway([python, "-m", "rmax", *args], {"PYTHONPATH": str(root / "src"), **env}, kernel, ranks, timeout)


def kill_midway(argv: list[str], env: dict, kernel: str, ranks: int, timeout: float = 60) -> tuple[dict, list]:
    """Start argv, wait until `ranks` processes of `kernel` run under it, SIGKILL it.
    Returns (what ran under it at the kill, what of that still ran 15 s later)."""
    full_env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "PYTHONDONTWRITEBYTECODE": "1", **env}
    top = subprocess.Popen(argv, env=full_env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + timeout
    while True:
        tree = _tree(top.pid)
        if sum(Path(cmd.split(b"\0")[0].decode()).name == kernel for _, _, cmd in tree.values()) >= ranks:
            break
        assert top.poll() is None, top.stderr.read().decode()
        assert time.monotonic() < deadline, f"{kernel} never started {ranks} ranks"
        time.sleep(0.1)
    time.sleep(0.5)   # into the measurement
    tree = _tree(top.pid)
    assert top.poll() is None, "it ended before the kill: " + top.stderr.read().decode()
    top.kill()
    top.wait()
    top.stderr.close()
    left = []
    for _ in range(150):
        now = _processes()
        left = [(pid, info[2]) for pid, info in tree.items() if now.get(pid, (0, None))[1] == info[1]]
        if not left:
            break
        time.sleep(0.1)
    for pid, _ in left:   # do not leave them to the next test
        os.kill(pid, signal.SIGKILL)
    return tree, left
