"""What every rmax-node family module shares: running one sub-command as one
stored run (local launcher, BLAS threads set), sizes as users write them, and
refusing sizes the machine cannot hold before a run is stored."""

from __future__ import annotations

import re
from typing import Callable

from rmax.bench.runner import Parsed, run_kernel
from rmax.errors import RmaxError
from rmax.inventory.memory import available_bytes
from rmax.launch import LaunchSpec
from rmax.store.runs import RunRecord

_UNITS = {"": 1, "b": 1, "k": 1024, "kib": 1024, "kb": 1000, "m": 1024 ** 2, "mib": 1024 ** 2, "mb": 10 ** 6,
          "g": 1024 ** 3, "gib": 1024 ** 3, "gb": 10 ** 9}


def parse_size(text: str | int, what: str = "size") -> int:
    """'64K', '8MiB', '1GB', '4096' -> bytes (K/M/G and KiB/MiB/GiB are powers of 1024, KB/MB/GB of 1000)."""
    if isinstance(text, int):
        value = text
    else:
        m = re.fullmatch(r"\s*(-?[0-9]+(?:\.[0-9]*)?(?:e[0-9]+)?)\s*([a-zA-Z]*)\s*", str(text))
        if not m or m.group(2).lower() not in _UNITS:
            raise RmaxError(f"{what}: '{text}' is not a size", hint="examples: 4096, 64K, 8MiB, 1GB")
        value = float(m.group(1)) * _UNITS[m.group(2).lower()]
        if value != int(value):
            raise RmaxError(f"{what}: '{text}' is not a whole number of bytes")
        value = int(value)
    if value <= 0:
        raise RmaxError(f"{what} must be greater than zero, not {text}")
    return value




def check_fits(what: str, nbytes: int, count: int = 1) -> None:
    """Refuse `count` buffers of `nbytes` that the free memory cannot hold."""
    avail = available_bytes()
    if avail and nbytes * count > avail:
        raise RmaxError(f"{what} of {nbytes / 2**20:.1f} MiB (x{count}) does not fit in the "
                        f"{avail / 2**20:.1f} MiB of available memory", hint="choose a smaller size")


def run_node(kind: str, argv: list[str], params: dict, parse: Callable[[list[dict]], Parsed], *,
             env: dict | None = None, blas_threads: int = 1, store=None, parent: str | None = None,
             label: str | None = None, spec: LaunchSpec | None = None, launcher: str | None = None,
             timeout: float = 600.0, on_stdout: Callable[[str], None] | None = None) -> RunRecord:
    """One process of rmax-node: here directly, or on spec.hosts' node through `launcher` (a survey's way)."""
    hosts = spec.hosts if spec is not None else None
    run_spec = LaunchSpec(program=argv, np=1, hosts=hosts, env=dict(env or {}), blas_threads=blas_threads)
    return run_kernel(kind, run_spec, params, parse, launcher=launcher if hosts else "local", timeout=timeout,
                      store=store, parent=parent, label=label, on_stdout=on_stdout)


def invalid(records: list[dict], key: Callable[[dict], str]) -> str | None:
    """The error text when any record failed its own validation, else None."""
    bad = [key(r) for r in records if not r.get("validated")]
    return f"validation failed for {', '.join(bad)}" if bad else None


def stat(summary: dict, unit: str, statistic: str = "median") -> dict:
    """A kernel summary with its unit and which statistic is the headline."""
    return {**summary, "unit": unit, "statistic": statistic}
