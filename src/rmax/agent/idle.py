"""Is the node idle? Other processes' runnable tasks, and under Slurm the jobs on this node.

The system load average cannot say: it counts the agent's own probes (which use every core)
and lags by a minute. So the load here is the kernel's own definition, runnable (R) and
uninterruptible (D) tasks (proc(5), /proc/loadavg), counted over every thread of every process
except the agent and the process sessions it started (each probe runs in a session of its own)
and the resource manager's own daemons (RESOURCE_MANAGER: slurmd runs a health check and waits for
it, munged and slurmctld answer the drain it may ask for; a 0.25 s window that met them answering
four nodes' checks read 2 runnable tasks), averaged over a short window. It is sampled only while
a probe set is due or running.

A node is the processes that share the agent's network namespace: on a real node every process
(the agent runs in the machine's own), on a virtual cluster's node that node's, not the other
nodes' that share the machine with it."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import threading
import time
from collections import deque
from dataclasses import dataclass

from rmax.inventory.load import proc_fields

SAMPLE_PERIOD = 0.25      # seconds between two counts
SLURM_PERIOD = 5.0        # seconds between two squeue calls while a probe runs
RESOURCE_MANAGER = frozenset({"slurmd", "slurmstepd", "slurmctld", "slurmdbd", "munged"})   # comm names


def _netns(pid: int | str) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/net")
    except OSError:   # ended, or another user's process (not root)
        return None


def foreign_tasks(me: int | None = None) -> dict[int, int]:
    """Runnable or uninterruptible threads, by process, of the processes of this node that are
    neither this one, nor in a session that one of its children leads, nor the resource manager's."""
    me = me or os.getpid()
    procs = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            f = proc_fields(f"/proc/{name}/stat")
            if f:
                procs[int(name)] = f   # f[1] ppid, f[3] session
    own_sessions = {pid for pid, f in procs.items() if int(f[1]) == me}
    mine = _netns(me)
    scoped = mine is not None and mine != _netns(1)    # in a namespace of its own: a virtual node
    found: dict[int, int] = {}
    for pid, f in procs.items():
        if pid == me or int(f[3]) in own_sessions or (scoped and _netns(pid) != mine):
            continue
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            t = proc_fields(f"/proc/{pid}/task/{tid}/stat")
            if t and t[0] in ("R", "D"):
                found[pid] = found.get(pid, 0) + 1
        if pid in found and command_name(pid) in RESOURCE_MANAGER:   # read only for the few that ran
            del found[pid]
    return found


def foreign_runnable(me: int | None = None) -> int:
    return sum(foreign_tasks(me).values())


def command_name(pid: int) -> str:
    """A process's command name (proc(5): comm), '?' when it ended."""
    try:
        with open(f"/proc/{pid}/comm", "rb") as f:
            return f.read().decode("utf-8", "replace").strip() or "?"
    except OSError:
        return "?"


@dataclass
class SlurmCheck:
    """Jobs running on this node, from squeue. mode 'auto': a node where Slurm is not installed
    or not configured (squeue cannot find its configuration) is a node without Slurm jobs;
    'on': squeue must answer, or the node counts as busy; 'off': never asked."""

    mode: str = "auto"
    node: str = ""
    absent: str | None = None   # why Slurm is taken as absent (auto), once found

    def jobs(self) -> tuple[list[str], str | None]:
        """(job ids on this node, reason the node counts as busy although no job was listed)."""
        if self.mode == "off" or self.absent:
            return [], None
        squeue = shutil.which("squeue")
        if not squeue:
            if self.mode == "on":
                return [], "squeue not found (slurm = on)"
            self.absent = "squeue is not installed"
            return [], None
        node = self.node or socket.gethostname().split(".")[0]
        try:
            p = subprocess.run([squeue, "-h", "-w", node, "-t", "RUNNING,COMPLETING", "-o", "%A"],
                               capture_output=True, text=True, timeout=15)
        except subprocess.TimeoutExpired:
            return [], "squeue did not answer within 15 s"
        if p.returncode != 0:
            why = (p.stderr.strip().splitlines() or ["squeue failed"])[-1]
            if self.mode == "auto" and ("configuration" in why or "slurm.conf" in why):
                self.absent = f"Slurm is not configured here ({why})"
                return [], None
            return [], why
        return p.stdout.split(), None


@dataclass
class Reading:
    load: float                  # average foreign runnable tasks over the window
    jobs: list[str]              # Slurm jobs on this node
    busy_reason: str | None      # why the node is not idle; None when it is
    cause: str | None = None     # that reason's kind, for the metrics: load | slurm_job | slurm_unanswered

    @property
    def idle(self) -> bool:
        return self.busy_reason is None


class IdleMonitor:
    """Counts foreign runnable tasks (from the caller's thread, or from a watcher thread while a
    probe runs) and says whether the node is idle."""

    def __init__(self, max_load: float, window: float, slurm: SlurmCheck):
        self.max_load = max_load
        self.samples: deque[float] = deque(maxlen=max(1, round(window / SAMPLE_PERIOD)))
        self.window = window
        self.slurm = slurm
        self.last = Reading(0.0, [], None)
        self._slurm_at = 0.0
        self._slurm = ([], None)
        self.culprits: dict[int, int] = {}   # pid -> runnable threads summed over the samples

    def top(self, most: int = 3) -> list[tuple[int, str, float]]:
        """The processes behind the load, most runnable first: (pid, command, their share of the load)."""
        n = max(1, len(self.samples))
        ranked = sorted(self.culprits.items(), key=lambda kv: -kv[1])[:most]
        return [(pid, command_name(pid), count / n) for pid, count in ranked]

    def _verdict(self, fresh_slurm: bool) -> Reading:
        load = sum(self.samples) / len(self.samples) if self.samples else 0.0
        if fresh_slurm or time.monotonic() - self._slurm_at >= SLURM_PERIOD:
            self._slurm, self._slurm_at = self.slurm.jobs(), time.monotonic()
        jobs, slurm_reason = self._slurm
        reason = cause = None
        if jobs:
            reason, cause = f"Slurm job {', '.join(jobs)} on this node", "slurm_job"
        elif slurm_reason:
            reason, cause = slurm_reason, "slurm_unanswered"
        elif load >= self.max_load:
            reason, cause = f"load of other processes {load:.2f} >= max_load {self.max_load:g}", "load"
        self.last = Reading(load, jobs, reason, cause)
        return self.last

    def sample(self) -> None:
        found = foreign_tasks()
        for pid, count in found.items():
            self.culprits[pid] = self.culprits.get(pid, 0) + count
        self.samples.append(float(sum(found.values())))

    def measure(self) -> Reading:
        """Sample for one whole window, then judge: the check before a probe set starts."""
        self.samples.clear()
        self.culprits.clear()
        for _ in range(self.samples.maxlen):
            self.sample()
            time.sleep(SAMPLE_PERIOD)
        return self._verdict(fresh_slurm=True)

    def watch(self, on_busy) -> "Watcher":
        """A thread that keeps sampling and calls on_busy(reading) once when the node stops being idle."""
        return Watcher(self, on_busy)


class Watcher:
    def __init__(self, monitor: IdleMonitor, on_busy):
        self.monitor, self.on_busy = monitor, on_busy
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="rmax-agent-idle", daemon=True)

    def _loop(self) -> None:
        while not self._stop.wait(SAMPLE_PERIOD):
            self.monitor.sample()
            reading = self.monitor._verdict(fresh_slurm=False)
            if not reading.idle:
                self.on_busy(reading)
                return

    def __enter__(self) -> "Watcher":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
