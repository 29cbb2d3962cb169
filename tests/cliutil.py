"""Helpers for tests that run the CLI as a user would. (A module of its own, not conftest:
test folders have conftest files of their own, and `from conftest import` would be ambiguous.)"""

from __future__ import annotations

import contextlib
import io
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


def run_in_process(args: list[str], env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """`rmax ARGS` through the CLI's own main (its exit codes and error lines), in this process: one
    interpreter's imports for many calls, not one each (seconds apiece on a loaded machine). What
    main changes for its process (signal handlers, variables) is put back, so that the rest of the
    test session keeps pytest's own."""
    import signal

    from rmax.cli.app import main

    out, err = io.StringIO(), io.StringIO()
    environ, hook = dict(os.environ), sys.unraisablehook
    handlers = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)}
    os.environ.update(env or {})
    code = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            main(list(args))
    except SystemExit as x:
        code = x.code if isinstance(x.code, int) else int(x.code is not None)
    finally:
        os.environ.clear()
        os.environ.update(environ)
        sys.unraisablehook = hook
        for s, h in handlers.items():
            signal.signal(s, h)
    return code, out.getvalue(), err.getvalue()


def peakflops_running(db: Path) -> subprocess.Popen:
    """`rmax bench peakflops` in a process of its own, once its run is in the store as running (at
    most 30 s): what a signal is sent to in the exit-status tests."""
    import time

    from rmax.store import open_store

    import signal

    # SIGINT as a terminal gives it: a suite started in the background by a non-interactive shell
    # has SIGINT ignored, which the child would inherit and keep (Python leaves an ignored SIGINT be)
    proc = subprocess.Popen([sys.executable, "-m", "rmax", "bench", "peakflops", "--budget", "60"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        time.sleep(0.2)
        if db.exists():
            with open_store() as s:
                if s.list(status="running"):
                    break
    return proc
