"""Helpers for tests that run the CLI as a user would. (A module of its own, not conftest:
test folders have conftest files of their own, and `from conftest import` would be ambiguous.)"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_cli(*args: str, env: dict | None = None, timeout: float = 300, check: bool = False,
            input: str | None = None) -> subprocess.CompletedProcess:
    """Run `rmax ARGS` exactly as a user would (a new process, the installed package)."""
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), full_env.get("PYTHONPATH")]))
    full_env.update(env or {})
    proc = subprocess.run([sys.executable, "-m", "rmax", *args], capture_output=True, text=True, env=full_env,
                          timeout=timeout, input=input)
    if check and proc.returncode != 0:
        raise AssertionError(f"rmax {' '.join(args)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
    return proc


def assert_one_line_error(proc: subprocess.CompletedProcess, code: int, *words: str) -> None:
    """The CLI's error contract: the exit code, no traceback, a message naming what is wrong."""
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [l for l in proc.stderr.splitlines() if l.strip()]
    assert 1 <= len(lines) <= 2, proc.stderr  # the error and at most one hint line
    for w in words:
        assert w in proc.stderr, (w, proc.stderr)
