"""Daemons started inside a node's namespaces, recorded by PID and stopped by PID.

A daemon runs in the foreground (its own option for that) as a child of `up`
in a new session, so its PID is known the moment it starts, with no pid-file
race. The state records the daemon before it starts (the intent log) and its
PID right after; `down` stops exactly that PID, after checking that the
process still is that daemon (its command line names the cluster's folder),
so a PID reused by another program is never signalled. A daemon with no option that can name
the folder (slurmdbd reads its configuration beside $SLURM_CONF) is recognised by its
environment instead."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from rmax.errors import RmaxError


def spawn(state, record, name: str, node: str, argv: list[str], errfile: Path,
          env: dict | None = None) -> subprocess.Popen:
    """Start argv (a foreground daemon) in node's namespaces; its PID is recorded in the state."""
    record("daemon", name, node=node)
    with open(errfile, "ab") as err:
        try:
            proc = subprocess.Popen([*state.enter(node), *argv], stdin=subprocess.DEVNULL,
                                    stdout=subprocess.DEVNULL, stderr=err, start_new_session=True, env=env)
        except OSError as e:
            raise RmaxError(f"cannot start {name}: {e.strerror}", hint=f"command: {' '.join(argv)}") from None
    state.objects[-1]["pid"] = proc.pid
    state.save()
    return proc


def _proc_text(pid: int, what: str) -> str:
    try:
        return Path(f"/proc/{pid}/{what}").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _gone(pid: int) -> bool:
    """True once pid has exited; reaps it when it is our own child (an `up` that failed half-way)."""
    try:
        if os.waitpid(pid, os.WNOHANG)[0] == pid:
            return True
    except ChildProcessError:
        pass
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[-1].split()[0] == "Z"


def alive(pid: int | None, marker: str) -> bool:
    """pid runs and is still the daemon we started (its command line, or else its environment,
    contains marker)."""
    return bool(pid) and not _gone(pid) and any(marker in _proc_text(pid, f) for f in ("cmdline", "environ"))


def stop(pid: int | None, marker: str, grace: float = 10.0) -> bool:
    """SIGTERM, then SIGKILL after grace seconds; True when a process was stopped."""
    if not alive(pid, marker):
        return False
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if _gone(pid):
            return True
        time.sleep(0.05)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return True
    while not _gone(pid):
        time.sleep(0.05)
    return True
