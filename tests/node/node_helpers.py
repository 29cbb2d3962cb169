"""Running rmax-node directly in the node tests: JSON lines in, records out."""

from __future__ import annotations

import json
import subprocess

from rmax.native import executable

SUMMARY_KEYS = {"n", "min", "median", "mean", "sd", "max", "ci95"}


def node(*args: str, timeout: float = 120, env: dict | None = None) -> subprocess.CompletedProcess:
    import os

    full = dict(os.environ)
    full.setdefault("OPENBLAS_NUM_THREADS", "1")
    full.update(env or {})
    return subprocess.run([executable("rmax-node"), *args], capture_output=True, text=True, timeout=timeout, env=full)


def records(*args: str, **kw) -> list[dict]:
    proc = node(*args, "--json", "-", **kw)
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def check_measurement(rec: dict, schema: str, unit: str) -> None:
    """The fields every measurement record carries, and their consistency."""
    assert rec["schema"] == schema
    assert rec["unit"] == unit
    assert isinstance(rec["validated"], bool) and isinstance(rec["target_met"], bool)
    s = rec["summary"]
    assert SUMMARY_KEYS <= set(s)
    assert s["n"] == len(rec["samples"]) >= 2
    assert s["min"] <= s["median"] <= s["max"]
    assert min(rec["samples"]) == s["min"] and max(rec["samples"]) == s["max"]
