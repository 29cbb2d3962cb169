"""Where the native executables (rmax-node, rmax-ranks, rmax-hpl, ...) are."""

import functools
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from rmax.errors import RmaxError


def library(name: str) -> str:
    """Absolute path of a native shared library (librmax-bindaddr.so), looked up as executables are."""
    return executable(name, runnable=False)


def executable(name: str, runnable: bool = True) -> str:
    """Absolute path of a native executable.

    Looked up in $RMAX_NATIVE_DIR (a development build), then beside the running
    Python (the virtual environment's bin/, where the install puts them), then on PATH.
    """
    candidates = []
    if os.environ.get("RMAX_NATIVE_DIR"):
        candidates.append(Path(os.environ["RMAX_NATIVE_DIR"]) / name)
    candidates.append(Path(sys.executable).parent / name)
    for path in candidates:
        if path.is_file() and (not runnable or os.access(path, os.X_OK)):
            return str(path)
    found = shutil.which(name)
    if found:
        return found
    raise RmaxError(f"native executable {name} not found", hint="run 'make install' to build it")


@functools.lru_cache(maxsize=None)
def describe(name: str, command: str | None = None) -> dict[str, dict]:
    """The options of a native executable (or of its sub-command) as its own table declares them
    (`--describe`): {name: {"type", "min", "max", "default", "help", "unit", "choices"?}}, read
    once per process. A default of None is one the kernel computes at run time."""
    argv = [executable(name), *([command] if command else []), "--describe"]
    what = " ".join([name, *([command] if command else [])])
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise RmaxError(f"{what} could not describe its options: {e}") from None
    if done.returncode != 0:
        lines = [x for x in done.stderr.splitlines() if x.strip()]
        raise RmaxError(f"{what} --describe failed: {lines[-1] if lines else f'exit status {done.returncode}'}")
    try:
        return {o["name"]: o for o in json.loads(done.stdout)["options"]}
    except (ValueError, KeyError, TypeError) as e:
        raise RmaxError(f"{what} --describe printed no option table: {e}") from None
