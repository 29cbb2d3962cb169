"""The process a survey's fan-out (fanout.py) starts on every node at once, one per node:
`python -m rmax.survey.node_worker --timeout S -- PROGRAM ARGS...` runs the program (a kernel, or
the inventory), ends it after S seconds, and sends its stdout, exit status and last error line
back on its stderr, in frames (frames.py) that name this rank and host. It always exits 0 once it has reported,
since a launcher ends the whole job when one rank fails, and the other nodes' results would be lost.

The program's stderr passes through line by line, so the watchdog still hears every node's step
markers and heartbeats. Only the standard library is imported: this starts on hundreds of nodes."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time

from rmax.survey.frames import encode, stream

RANK_VARIABLES = ("OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID")
GRACE = 2.0     # seconds between SIGTERM and SIGKILL for a program past its time
STEP = "rmax-step: "
MARKERS = (STEP, "rmax-alive: ", "rmax-exit: ")


def rank() -> int:
    """This process's rank in the launched job (0 when launched alone)."""
    for name in RANK_VARIABLES:
        value = os.environ.get(name, "")
        if value.isdigit():
            return int(value)
    return 0


def run(argv: list[str], timeout: float) -> dict:
    """Run argv for at most `timeout` s: {rc, stdout, error, timed_out, last_step, seconds}."""
    start = time.monotonic()
    try:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    except OSError as e:
        return {"rc": None, "stdout": "", "error": f"cannot run {argv[0]}: {e.strerror}", "timed_out": False,
                "last_step": None, "seconds": 0.0}
    out: list[bytes] = []
    tail: list[str] = []
    step: list[str] = []

    def drain_stderr():
        for raw in proc.stderr:
            os.write(2, raw)   # one write per line: the markers stay whole for the watchdog
            line = raw.decode(errors="replace").rstrip("\n")
            if line.startswith(STEP):
                step[:] = [line[len(STEP):]]
            elif line.strip() and not line.startswith(MARKERS):
                tail[:] = [line]

    readers = [threading.Thread(target=lambda: out.append(proc.stdout.read()), daemon=True),
               threading.Thread(target=drain_stderr, daemon=True)]
    for r in readers:
        r.start()
    timed_out = False
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        proc.terminate()
        try:
            proc.wait(GRACE)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    for r in readers:
        r.join(GRACE)
    error = (f"timed out after {timeout:g} s" + (f" in step {step[0]}" if step else "")) if timed_out else \
        (tail[0] if tail and proc.returncode else None)
    if proc.returncode and not timed_out and not error:
        error = f"{os.path.basename(argv[0])} exited with status {proc.returncode}"
    return {"rc": proc.returncode, "stdout": b"".join(out).decode(errors="replace"), "error": error,
            "timed_out": timed_out, "last_step": step[0] if step else None, "seconds": time.monotonic() - start}


def boot_id() -> str | None:
    """The kernel's boot id: nodes that report the same one share one machine (a virtual cluster's)."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip()
    except OSError:
        return None


def main(args: list[str]) -> int:
    if len(args) < 4 or args[0] != "--timeout" or args[2] != "--":
        print("usage: python -m rmax.survey.node_worker --timeout SECONDS -- PROGRAM [ARGS...]", file=sys.stderr)
        return 2
    try:
        timeout = float(args[1])
    except ValueError:
        timeout = float("nan")
    if not timeout > 0:
        print(f"node_worker: --timeout must be a positive number of seconds, not '{args[1]}'", file=sys.stderr)
        return 2
    result = {**run(args[3:], timeout), "boot_id": boot_id()}
    for frame in stream(encode(rank(), socket.gethostname(), result)):
        os.write(2, frame)   # stderr (frames.py says why); one write each: never split by this process
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
