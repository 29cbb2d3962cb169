"""Draining a node in Slurm: `scontrol update NodeName=X State=DRAIN Reason=...`, the line an
administrator would type, with a reason that says who drained it and why, kept readable.

The reason goes to scontrol as one argv item (no shell), so any printable text is safe there;
only control characters are replaced, and it is cut to what sinfo shows whole."""

from __future__ import annotations

import shlex
import shutil
import subprocess

REASON_MAX = 120   # sinfo -R shows the reason in a column; scontrol keeps more, but nobody reads it


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


def drain(node: str, reason: str, timeout: float = 30.0) -> str:
    """Drain `node` with `reason`; what happened, in a few words."""
    if not shutil.which("scontrol"):
        return "not drained: scontrol not found"
    try:
        p = subprocess.run(command(node, reason), capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"not drained: scontrol did not answer within {timeout:g} s"
    if p.returncode != 0:
        said = next((l for l in reversed(p.stderr.splitlines()) if l.strip()), f"exit status {p.returncode}")
        return f"not drained: {said.strip()}"
    return f"drained {node}"
