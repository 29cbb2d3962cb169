"""Reading facts without guessing: every reader returns (value, reason).

A value that cannot be read is None and the reason says why, so the inventory
can show "null (no cpufreq in sysfs)" instead of a made-up number."""

from __future__ import annotations

import os
import shutil
import subprocess

DEFAULT_TIMEOUT = 5.0


def read_text(path: str) -> tuple[str | None, str | None]:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read(), None
    except FileNotFoundError:
        return None, f"{path} does not exist"
    except OSError as e:
        return None, f"cannot read {path}: {e.strerror or e}"


def read_value(path: str) -> tuple[str | None, str | None]:
    """One stripped sysfs value; an empty or unreadable file is a reason, not a value."""
    text, reason = read_text(path)
    if text is None:
        return None, reason
    text = text.strip()
    return (text, None) if text else (None, f"{path} is empty")


def run(argv: list[str], timeout: float = DEFAULT_TIMEOUT, env: dict | None = None,
        merge_stderr: bool = False) -> tuple[str | None, str | None]:
    """stdout of argv, or None and why (missing tool, timeout, non-zero exit)."""
    if shutil.which(argv[0]) is None:
        return None, f"{argv[0]} not found on PATH"
    try:
        p = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                           timeout=timeout, env=env, errors="replace")
    except subprocess.TimeoutExpired:
        return None, f"{' '.join(argv)} timed out after {timeout:g} s"
    except OSError as e:
        return None, f"cannot run {argv[0]}: {e.strerror or e}"
    out = p.stdout + (p.stderr if merge_stderr else "")
    if p.returncode != 0:
        detail = (p.stderr.strip().splitlines() or ["no message"])[-1]
        return None, f"{' '.join(argv)} exited with {p.returncode}: {detail}"
    return out, None


class Section(dict):
    """A dict of facts plus a `reasons` dict: field -> why it is null."""

    def __init__(self):
        super().__init__()
        self["reasons"] = {}

    def put(self, field: str, value, reason: str | None = None):
        self[field] = value
        if value is None:
            self["reasons"][field] = reason or "not available"
        return value

    def done(self) -> dict:
        return dict(self)


def int_or_none(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def listdir(path: str) -> list[str]:
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def parse_cpulist(text: str) -> list[int]:
    """'0-3,8,10-11' -> [0, 1, 2, 3, 8, 10, 11]."""
    cpus: list[int] = []
    for part in text.strip().split(","):
        if not part:
            continue
        if "-" in part:
            a, b = part.split("-", 1)
            cpus.extend(range(int(a), int(b) + 1))
        else:
            cpus.append(int(part))
    return cpus
