"""What every rmax-node family module shares: running one sub-command as one
stored run (local launcher, BLAS threads set), and refusing input the kernel
would refuse, or sizes the machine cannot hold, before a run is stored."""

from __future__ import annotations

import os
import subprocess
from typing import Callable

from rmax.bench.runner import Parsed, run_kernel
from rmax.errors import RmaxError
from rmax.inventory.memory import available_bytes
from rmax.launch import LaunchSpec
from rmax.store.runs import RunRecord


def check_fits(what: str, nbytes: int, count: int = 1) -> None:
    """Refuse `count` buffers of `nbytes` that the free memory cannot hold."""
    avail = available_bytes()
    if avail and nbytes * count > avail:
        raise RmaxError(f"{what} of {nbytes / 2**20:.1f} MiB (x{count}) does not fit in the "
                        f"{avail / 2**20:.1f} MiB of available memory", hint="choose a smaller size")


def check_args(argv: list[str], env: dict | None = None) -> None:
    """Refuse, before a run is stored, what the kernel itself would refuse: it parses and checks
    argv with --check-args and exits without measuring, so its limits live in one place."""
    try:
        done = subprocess.run([*argv, "--check-args"], capture_output=True, text=True, timeout=60,
                              env={**os.environ, **(env or {})})
    except (OSError, subprocess.TimeoutExpired) as e:
        raise RmaxError(f"{argv[0]} could not check its arguments: {e}") from None
    if done.returncode != 0:
        lines = [x for x in done.stderr.splitlines() if x.strip()]
        raise RmaxError(lines[-1].replace(": error: ", ": ", 1) if lines else
                        f"{' '.join(argv[:2])} refused its arguments (exit status {done.returncode})")


def run_node(kind: str, argv: list[str], params: dict, parse: Callable[[list[dict]], Parsed], *,
             env: dict | None = None, blas_threads: int = 1, store=None, parent: str | None = None,
             label: str | None = None, spec: LaunchSpec | None = None, launcher: str | None = None,
             timeout: float = 600.0, on_stdout: Callable[[str], None] | None = None) -> RunRecord:
    """One process of rmax-node: here directly, or on spec.hosts' node through `launcher` (a survey's way)."""
    hosts = spec.hosts if spec is not None else None
    if not hosts:
        check_args(argv, env)   # elsewhere the node's own limits (memory, ISA) decide, in its run
    run_spec = LaunchSpec(program=argv, np=1, hosts=hosts, env=dict(env or {}), blas_threads=blas_threads)
    return run_kernel(kind, run_spec, params, parse, launcher=launcher if hosts else "local", timeout=timeout,
                      store=store, parent=parent, label=label, on_stdout=on_stdout)


def invalid(records: list[dict], key: Callable[[dict], str]) -> str | None:
    """The error text when any record failed its own validation, else None."""
    bad = [key(r) for r in records if not r.get("validated")]
    return f"validation failed for {', '.join(bad)}" if bad else None
