"""Draining a node in Slurm: `scontrol update NodeName=X State=DRAIN Reason=...`, the line an
administrator would type, with a reason that says who drained it and why, kept readable; and the
one place rmax runs scontrol (the health check's resume and node lookup too).

The reason goes to scontrol as one argv item (no shell), so any printable text is safe there;
only control characters are replaced, and it is cut to what sinfo shows whole."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess

REASON_MAX = 160   # characters of a drain reason: sinfo -R shows its first 20, scontrol show node all of it
SCONTROL_TIMEOUT = 10.0
NODE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")   # what Slurm takes as a node's name


def reason_text(found: str, who: str) -> str:
    """The drain reason: what was found, then who found it ("[rmax survey]"), printable, cut short."""
    text = " ".join("".join(c if c.isprintable() else " " for c in found).split())
    tail = f" [{who}]"
    return (text if len(text) + len(tail) <= REASON_MAX else text[:REASON_MAX - len(tail) - 3] + "...") + tail


def command(node: str, reason: str) -> list[str]:
    """The scontrol argv that drains `node` with `reason`."""
    return [shutil.which("scontrol") or "scontrol", "update", f"NodeName={node}", "State=DRAIN", f"Reason={reason}"]


def shown(node: str, reason: str) -> str:
    """That command as a line an administrator can paste into a shell."""
    return shlex.join(["scontrol", *command(node, reason)[1:]])


def scontrol(args: list[str], timeout: float = SCONTROL_TIMEOUT) -> tuple[subprocess.CompletedProcess | None,
                                                                           str | None]:
    """Run `scontrol ARGS`: (the finished process, None), or (None, what went wrong in a few words)."""
    path = shutil.which("scontrol")
    if not path:
        return None, "scontrol not found"
    try:
        p = subprocess.run([path, *args], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, f"scontrol did not answer within {timeout:g} s"
    if p.returncode != 0:
        said = next((line for line in reversed(p.stderr.splitlines()) if line.strip()), f"exit status {p.returncode}")
        return None, said.strip()
    return p, None


def drain(node: str, reason: str) -> str:
    """Drain `node` with `reason`; what happened, in a few words."""
    if not NODE_NAME.match(node):
        return f"not drained: {node[:60]!r} is not a Slurm node name"
    _, err = scontrol(command(node, reason)[1:])
    return f"not drained: {err}" if err else f"drained {node}"
