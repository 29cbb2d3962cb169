"""Where the native executables (rmax-node, rmax-ranks, rmax-hpl, ...) are."""

import os
import shutil
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
