"""Running a launched job under a watchdog.

The job gets its own process group; on timeout (or Ctrl-C) the whole group
is killed, so no rank outlives rmax. Kernels announce phases on stderr as
"rmax-step: NAME" (native/common/rmx_step.c), which lets a timeout say which
step hung."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Callable

from rmax.errors import RmaxError, RunFailed

STEP_PREFIX = "rmax-step: "
KERNEL_ERROR = re.compile(r"^rmax-[\w-]+(?: [\w-]+)?: error:")
# Messages of the dynamic loader and launchers that deserve a specific hint.
KNOWN_FAILURES = (
    ("libblas.so.3: cannot open shared object", "the BLAS library libblas.so.3 is missing",
     "apt-get install libopenblas0-pthread (or another BLAS)"),
    ("libmpi.so", "the MPI library is missing", "apt-get install openmpi-bin libopenmpi-dev"),
    ("There are not enough slots available", "the launcher found fewer slots than ranks",
     "use fewer ranks, add hosts, or pass --oversubscribe"),
    ("ssh: Could not resolve hostname", "a host does not resolve", "check the host names"),
    ("Host key verification failed", "ssh to a host failed", "set up password-less ssh to every host"),
)


@dataclass
class JobResult:
    argv: list[str]
    returncode: int | None
    stdout: str
    stderr_tail: list[str]
    duration: float
    timed_out: bool = False
    last_step: str | None = None
    steps: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    def failure(self, what: str) -> RunFailed:
        """A one-line error for a failed job, naming the hung step or the cause."""
        if self.timed_out:
            step = f" in step '{self.last_step}'" if self.last_step else " before its first step"
            return RunFailed(f"{what} timed out after {self.duration:.0f} s{step}; the job was killed",
                             hint="raise --timeout, or check the hosts and network")
        text = "\n".join(self.stderr_tail)
        from rmax.launch.base import diagnose

        if found := diagnose(what, self.argv, text):   # a launcher's own failure, e.g. srun's MPI plugin
            return found
        for needle, message, hint in KNOWN_FAILURES:
            if needle in text:
                return RunFailed(f"{what} failed: {message}", hint=hint)
        return RunFailed(f"{what} failed with exit status {self.returncode}" + (f": {cause}" if (cause := self.cause()) else ""))

    def cause(self) -> str:
        """The most telling stderr line: a kernel's own error line ("rmax-net: error: ..."), else one
        that says error, else the last with words in it (launchers frame messages in rule lines)."""
        lines = [l.strip() for l in self.stderr_tail if not l.startswith(STEP_PREFIX) and any(c.isalpha() for c in l)]
        for pattern in (KERNEL_ERROR, re.compile(r"error", re.I)):
            found = next((l for l in lines if pattern.search(l)), None)
            if found:
                return found
        return lines[-1] if lines else ""


def _kill_group(proc: subprocess.Popen, grace: float = 2.0) -> None:
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()


def run_job(argv: list[str], timeout: float, env: dict[str, str] | None = None, cwd: str | None = None,
            on_stdout: Callable[[str], None] | None = None, on_step: Callable[[str], None] | None = None,
            tail_lines: int = 40) -> JobResult:
    """Run argv (never through a shell) with a watchdog; stdout is returned whole."""
    if timeout <= 0:
        raise RmaxError(f"timeout must be positive, not {timeout}")
    full_env = dict(os.environ)
    full_env.update(env or {})
    full_env["RMAX_STEPS"] = "1"
    start = time.monotonic()
    try:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                env=full_env, cwd=cwd, text=True, errors="replace", start_new_session=True)
    except FileNotFoundError:
        raise RmaxError(f"cannot run {argv[0]}: not found") from None
    except PermissionError:
        raise RmaxError(f"cannot run {argv[0]}: permission denied") from None

    out: list[str] = []
    tail: deque[str] = deque(maxlen=tail_lines)
    steps: list[str] = []

    def read_stdout():
        for line in proc.stdout:
            out.append(line)
            if on_stdout:
                on_stdout(line)

    def read_stderr():
        for line in proc.stderr:
            line = line.rstrip("\n")
            if line.startswith(STEP_PREFIX):
                steps.append(line[len(STEP_PREFIX):])
                if on_step:
                    on_step(steps[-1])
            else:
                tail.append(line)

    readers = [threading.Thread(target=read_stdout, daemon=True), threading.Thread(target=read_stderr, daemon=True)]
    for r in readers:
        r.start()
    timed_out = False
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(proc)
    except BaseException:  # Ctrl-C, SIGTERM: take the ranks down with us
        _kill_group(proc)
        raise
    for r in readers:
        r.join(5)
    return JobResult(argv=argv, returncode=proc.returncode, stdout="".join(out), stderr_tail=list(tail),
                     duration=time.monotonic() - start, timed_out=timed_out,
                     last_step=steps[-1] if steps else None, steps=steps)


def prepare(spec, launcher: str | None = None) -> list[str]:
    """The full argv for spec with the named (or default) launcher; bad input raises here, before any run starts."""
    from rmax.launch.base import get_launcher
    from rmax.launch.hosts import check_resolvable

    argv = get_launcher(launcher).argv(spec)
    if spec.hosts:
        check_resolvable(spec.hosts)
    return argv
