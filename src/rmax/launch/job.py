"""Running a launched job under a watchdog.

The job runs under a supervisor (supervisor.py) that ends every process of it
when rmax ends, even by SIGKILL; on timeout (or Ctrl-C) rmax stops the
supervisor, which stops the job. Native kernels announce phases on stderr as
"rmax-step: NAME (rank R on HOST)", a heartbeat "rmax-alive: rank R on HOST
every T s" and "rmax-exit: rank R on HOST" (native/common/rmx_step.c, rmx_lifeline.c): a timeout names the step
it hung in and the ranks that stopped answering, and a launch none of whose
ranks announces itself within the start-up deadline is ended as "did not start".

A rank heard from once that then sends no heartbeat for the lost-after time
($RMAX_LOST_AFTER, --lost-after; default LOST_AFTER) ends the job at once: a
host all of whose ranks fell silent is named lost (a remote rank's stderr
reaches rmax through mpirun's daemons over the network, so a node whose link
or power is gone stops its heartbeats), otherwise the silent ranks are named.
The heartbeat comes from a thread of its own, so a rank blocked in MPI goes on
beating."""

from __future__ import annotations

import contextlib
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from rmax.errors import RmaxError, RunFailed
from rmax.launch.base import REGISTRY, WATCHDOG_ENV, LaunchSpec, diagnose, get_launcher
from rmax.launch.hosts import check_resolvable

STEP_PREFIX = "rmax-step: "
STEP_LINE = re.compile(r"^rmax-step: (?P<name>.*?)(?: \(rank (?P<rank>\d+) on (?P<host>[^\s()]+)\))?$")
ALIVE_LINE = re.compile(r"^rmax-alive: rank (?P<rank>\d+) on (?P<host>\S+) every (?P<every>[\d.]+) s$")
EXIT_LINE = re.compile(r"^rmax-exit: rank (?P<rank>\d+) on (?P<host>\S+)$")
KERNEL_ERROR = re.compile(r"^rmax-[\w-]+(?: [\w-]+)?: error:")
# Open MPI's frame around a message: no cause in it (help-errmgr-base.txt).
BOILERPLATE = re.compile(r"should be reported to the developers|^mpirun: abort is already in progress")
SUPERVISOR = Path(__file__).with_name("supervisor.py")
GRACE = 2.0              # seconds between SIGTERM and SIGKILL, in the supervisor
SILENT_BEATS = 3         # a rank missing this many heartbeats (plus a second) has stopped answering
LOST_AFTER = 15.0        # default seconds without a heartbeat before a rank's host is taken for lost
START_BASE, START_PER_RANK = 60.0, 0.001   # default start-up deadline: 60 s + 1 ms per rank
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


class HostsLost(RunFailed):
    """A job stopped because ranks fell silent (a lost host); `hosts` are those lost whole."""

    def __init__(self, message: str, hosts: list[str], hint: str | None = None):
        super().__init__(message, hint=hint)
        self.hosts = hosts


@dataclass
class RankProgress:
    """What the watchdog last heard from one rank."""

    rank: int
    host: str
    last_step: str | None = None
    heard: float = 0.0          # time.monotonic() of its last step or heartbeat
    every: float = 1.0          # its heartbeat period, s
    exited: bool = False        # it ended normally (a finished rank is not a silent one)

    def silent(self, now: float) -> bool:
        return not self.exited and now - self.heard > SILENT_BEATS * self.every + 1.0

    def lost(self, now: float, after: float) -> bool:
        """Silent for `after` seconds, and for no fewer than SILENT_BEATS of its own heartbeats (a
        large job beats less often: rmx_lifeline.c)."""
        return not self.exited and now - self.heard > max(after, SILENT_BEATS * self.every + 1.0)


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
    not_started: bool = False       # killed because no rank announced itself within the start-up deadline
    start_timeout: float | None = None
    ranks: dict[int, RankProgress] = field(default_factory=dict)
    expected_ranks: int | None = None
    silent: list[RankProgress] = field(default_factory=list)   # ranks that had stopped answering at the timeout
    lost: dict[int, float] = field(default_factory=dict)   # rank -> seconds without a heartbeat, when that stopped the job
    given_up: dict[int, float] = field(default_factory=dict)   # ranks on_lost took for lost: the job went on
    unreachable: dict[str, str] = field(default_factory=dict)  # hosts that answered no launch while it started

    @property
    def ok(self) -> bool:
        return (self.returncode == 0 and not self.timed_out and not self.not_started and not self.lost
                and not self.unreachable)

    @property
    def launcher(self) -> str:
        """The launcher's name as the user knows it (mpirun, mpiexec.mpich, srun), else the program's."""
        commands = {cls.command for cls in REGISTRY.values()}
        return next((Path(a).name for a in self.argv if Path(a).name in commands), Path(self.argv[0]).name)

    def failure(self, what: str) -> RunFailed:
        """A one-line error for a failed job, naming the lost hosts, the hung step, the silent ranks, or the cause."""
        if self.unreachable:
            hosts = sorted(self.unreachable)
            said = "; ".join(f"host {h} lost: {self.unreachable[h]}" for h in hosts[:4]) + (
                f"; and {len(hosts) - 4} more hosts" if len(hosts) > 4 else "")
            return HostsLost(f"{what} did not start within {self.duration:.3g} s: {said}; the job was stopped",
                             hosts=hosts, hint="check those hosts and their network links")
        if self.lost:
            step = f" in step '{self.last_step}'" if self.last_step else ""
            return HostsLost(f"{what} failed after {self.duration:.3g} s{step}: {self.lost_detail()}; "
                             "the job was stopped", hosts=self.lost_hosts(),
                             hint="check those hosts and their network links; --lost-after SECONDS "
                                  "(RMAX_LOST_AFTER) sets how long a silent rank is waited for")
        if self.not_started:
            return RunFailed(f"{what} did not start: {self.launcher} started no rank within "
                             f"{self.start_timeout:.0f} s; the job was killed",
                             hint="check --np against the slots of the hosts, and that the hosts answer; "
                                  "RMAX_START_TIMEOUT=SECONDS allows a slower start")
        if self.timed_out:
            step = f" in step '{self.last_step}'" if self.last_step else " before its first step"
            who = self.culprits()
            return RunFailed(f"{what} timed out after {self.duration:.3g} s{step}{'; ' + who if who else ''}; "
                             "the job was killed", hint="raise --timeout, or check the hosts and network")
        text = "\n".join(self.stderr_tail)
        if found := diagnose(what, self.argv, text):   # a launcher's own failure, e.g. srun's MPI plugin
            return found
        for needle, message, hint in KNOWN_FAILURES:
            if needle in text:
                return RunFailed(f"{what} failed: {message}", hint=hint)
        return RunFailed(f"{what} failed with exit status {self.returncode}" + (f": {cause}" if (cause := self.cause()) else ""))

    def lost_hosts(self) -> list[str]:
        """Hosts every rank of which (that had not ended) fell silent: lost, not just a stuck rank."""
        hosts = {self.ranks[r].host for r in self.lost}
        return sorted(h for h in hosts
                      if all(p.rank in self.lost or p.exited for p in self.ranks.values() if p.host == h))

    def lost_detail(self) -> str:
        """"host X lost: no heartbeat from rank R for N s" for each lost host, then the ranks that
        fell silent on hosts that still answer."""
        def ranks(rs: list[int]) -> str:
            return f"rank{'s' if len(rs) > 1 else ''} " + ", ".join(map(str, rs[:4])) + (
                f" and {len(rs) - 4} more" if len(rs) > 4 else "")

        parts, hosts = [], self.lost_hosts()
        for h in hosts[:4]:
            rs = sorted(r for r in self.lost if self.ranks[r].host == h)
            parts.append(f"host {h} lost: no heartbeat from {ranks(rs)} for {min(self.lost[r] for r in rs):.0f} s")
        if len(hosts) > 4:
            parts.append(f"and {len(hosts) - 4} more hosts lost")
        stuck = sorted(r for r in self.lost if self.ranks[r].host not in hosts)
        parts += [f"rank {r} on {self.ranks[r].host} stopped answering: no heartbeat for {self.lost[r]:.0f} s"
                  for r in stuck[:4]] + ([f"and {len(stuck) - 4} more ranks"] if len(stuck) > 4 else [])
        return "; ".join(parts)

    def culprits(self) -> str:
        """Which ranks stopped answering: those silent while others went on, or all of them."""
        parts = []
        if self.silent:
            def name(r: RankProgress) -> str:
                return f"rank {r.rank} on {r.host}" + (f" (in step '{r.last_step}')" if r.last_step else "")

            shown = ", ".join(name(r) for r in self.silent[:4]) + (
                f" and {len(self.silent) - 4} more" if len(self.silent) > 4 else "")
            heard = len(self.ranks)
            if len(self.silent) == heard and heard > 1:
                parts.append(f"all {heard} ranks stopped answering: {shown}")
            else:
                parts.append(f"stopped answering: {shown}")
        elif self.ranks:
            parts.append("every rank still answered (working, or waiting inside the step)")
        if self.expected_ranks:
            missing = [r for r in range(self.expected_ranks) if r not in self.ranks]
            if missing and len(missing) < self.expected_ranks:
                listed = ", ".join(map(str, missing[:8])) + (" ..." if len(missing) > 8 else "")
                parts.append(f"never heard from rank{'s' if len(missing) > 1 else ''} {listed}")
        return "; ".join(parts)

    def cause(self) -> str:
        """The most telling stderr line: a kernel's own error line ("rmax-net: error: ..."), else one
        that says error, else the last with words in it (launchers frame messages in rule lines).
        A line that ends in a colon ("An internal error has occurred in ORTE:") gets the launcher's
        next line, its detail; where none came, the next error line is taken instead."""
        lines = [l.strip() for l in self.stderr_tail if not l.startswith(STEP_PREFIX) and any(c.isalpha() for c in l)]
        bare = None   # a framing line with no detail after it, kept should nothing better come
        for pattern in (KERNEL_ERROR, re.compile(r"error", re.I)):
            for i, line in enumerate(lines):
                if not pattern.search(line):
                    continue
                if not line.endswith(":"):
                    return line
                detail = next((l for l in lines[i + 1:] if not BOILERPLATE.search(l)), None)
                if detail:
                    return f"{line} {detail}"
                bare = bare or line
        if bare:
            return f"{bare} (the launcher gave no detail after it)"
        return lines[-1] if lines else ""


def start_timeout(spec: "LaunchSpec | None") -> float | None:
    """Seconds a launch of spec may take until its first rank announces itself: $RMAX_START_TIMEOUT,
    else 60 s + 1 ms per rank. None (no deadline) for programs that announce nothing (not rmax-*)."""
    given = os.environ.get("RMAX_START_TIMEOUT")
    value = None
    if given is not None:
        try:
            value = float(given)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value <= 0:
            raise RmaxError(f"RMAX_START_TIMEOUT must be a positive number of seconds, not '{given}'",
                            hint="e.g. RMAX_START_TIMEOUT=300")
    if spec is None or not Path(spec.program[0]).name.startswith("rmax-"):
        return None
    return value if value is not None else START_BASE + START_PER_RANK * spec.np


def lost_after() -> float | None:
    """Seconds of silence after which a rank's host is taken for lost: $RMAX_LOST_AFTER (set by
    --lost-after; 0 turns the check off), else LOST_AFTER."""
    given = os.environ.get("RMAX_LOST_AFTER")
    if given is None:
        return LOST_AFTER
    try:
        value = float(given)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0 or value > 7 * 86400:
        raise RmaxError(f"RMAX_LOST_AFTER must be a number of seconds from 0 (off) to a week, not '{given}'",
                        hint="e.g. RMAX_LOST_AFTER=30")
    return value or None


def answering(quiet: dict[int, float], ranks: dict[int, RankProgress], spec: "LaunchSpec | None") -> set[int]:
    """Of the silent ranks, those on a host that still answers a launch (launch/reach.py): all of a
    host's ranks silent on a loaded machine is a host starved of CPU, or its output held up, not a
    lost one. Ranks silent beside others of their host that still beat are stuck, not asked about;
    without the launcher and hosts to ask through, none is taken for alive."""
    if spec is None or not spec.hosts or not spec.launcher:
        return set()
    silent_hosts = {ranks[r].host for r in quiet
                    if all(p.rank in quiet or p.exited for p in ranks.values() if p.host == ranks[r].host)}
    names = {h.name for h in spec.hosts}
    asked = sorted(h for h in silent_hosts if h in names)
    if not asked:
        return set()
    from rmax.launch.reach import unanswered

    via = next((h.name for h in spec.hosts if h.name not in silent_hosts), None)
    if via is None and len(asked) > 1:   # every host silent at once: the launching side stalled, not them all lost
        return set(quiet)
    gone = unanswered(asked, spec.launcher, run_job, via=via)
    return {r for r in quiet if ranks[r].host in asked and ranks[r].host not in gone}


def starting(spec: "LaunchSpec | None") -> dict[str, str]:
    """The hosts of a launch that has not started that do not answer a launch of their own (one
    whose daemon cannot come up waits for them until the start-up deadline): host -> evidence."""
    if spec is None or not spec.hosts or not spec.launcher or len(spec.hosts) < 2:
        return {}
    from rmax.launch.reach import unanswered

    names = list(dict.fromkeys(h.name for h in spec.hosts))
    return unanswered(names, spec.launcher, run_job, via=names[0])


def _stop(proc: subprocess.Popen) -> None:
    """Ask the supervisor to end the job (it escalates to SIGKILL after GRACE); kill it if it hangs.
    Neither wait is unbounded: SIGKILL cannot be refused, but a supervisor the kernel holds (a
    clean-checkout suite saw one outlive it 30 s on a node cut to 0.2 core) must not hold rmax."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(GRACE + 5.0)
            return


def _check_program(argv: list[str], env: dict[str, str], cwd: str | None) -> None:
    """Refuse a program that cannot be started (the supervisor could only exit 127)."""
    program = os.path.join(cwd, argv[0]) if cwd and os.sep in argv[0] else argv[0]   # as exec after chdir
    if shutil.which(program, path=env.get("PATH")):
        return
    if os.sep in program and os.path.exists(program):
        raise RmaxError(f"cannot run {argv[0]}: permission denied")
    raise RmaxError(f"cannot run {argv[0]}: not found")


def run_job(argv: list[str], timeout: float | Callable[[], float], env: dict[str, str] | None = None,
            cwd: str | None = None, on_stdout: Callable[[str], None] | None = None,
            on_step: Callable[[str], None] | None = None, tail_lines: int = 40, spec: "LaunchSpec | None" = None,
            on_stderr: Callable[[str], bool] | None = None,
            on_lost: Callable[[dict[int, float], dict[int, "RankProgress"]], list[int]] | None = None,
            done: Callable[[], bool] | None = None) -> JobResult:
    """Run argv (never through a shell) under the supervisor and the watchdog; stdout is returned whole.

    on_stderr sees every stderr line that is no watchdog marker, as it comes; a line it answers
    True for is its own (a progress line) and stays out of the tail a failure's cause is read from.

    spec, when given, is what argv launches: its rank count lets a timeout name the ranks never
    heard from, and a native program gets the start-up deadline (start_timeout). `timeout` may be a
    function, read as the job runs: a job given more work on its way (fanout.FanOut.extend)."""
    limit = timeout if callable(timeout) else (lambda: timeout)
    if limit() <= 0:
        raise RmaxError(f"timeout must be positive, not {limit()}")
    deadline = start_timeout(spec)
    lost_limit = lost_after()
    full_env = dict(os.environ)
    full_env.update(env or {})
    full_env.update(WATCHDOG_ENV)
    _check_program(argv, full_env, cwd)
    start = time.monotonic()
    # The supervisor gets the read end of a lifeline (EOF when this process ends, however it ends)
    # and copies of the read ends of the job's output, to drain them once nobody else does.
    lifeline_r, lifeline_w = os.pipe()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    theirs = (lifeline_r, out_r, err_r)
    try:
        proc = subprocess.Popen([sys.executable, "-I", "-S", str(SUPERVISOR), *map(str, theirs), str(GRACE), *argv],
                                stdout=out_w, stderr=err_w, stdin=subprocess.DEVNULL, env=full_env, cwd=cwd,
                                start_new_session=True, pass_fds=theirs)
    except BaseException:
        for fd in (lifeline_w, out_r, err_r):
            os.close(fd)
        raise
    finally:
        for fd in (lifeline_r, out_w, err_w):
            os.close(fd)
    job_out = open(out_r, errors="replace")
    job_err = open(err_r, errors="replace")

    out: list[str] = []
    tail: deque[str] = deque(maxlen=tail_lines)
    steps: list[str] = []
    ranks: dict[int, RankProgress] = {}
    heard = threading.Event()   # a rank announced itself or printed a result

    def progress(rank: str | None, host: str | None, step: str | None = None, every: str | None = None,
                 exited: bool = False) -> None:
        heard.set()
        if rank is None:
            return
        r = ranks.setdefault(int(rank), RankProgress(int(rank), host or "?"))
        r.heard = time.monotonic()
        if step is not None:
            r.last_step = step
        if every is not None:
            r.every = float(every)
        r.exited = r.exited or exited

    def read_stdout():
        for line in job_out:
            heard.set()
            out.append(line)
            if on_stdout:
                on_stdout(line)

    def read_stderr():
        for line in job_err:
            line = line.rstrip("\n")
            if m := ALIVE_LINE.match(line):
                progress(m["rank"], m["host"], every=m["every"])
            elif m := EXIT_LINE.match(line):
                progress(m["rank"], m["host"], exited=True)
            elif line.startswith(STEP_PREFIX):
                m = STEP_LINE.match(line)
                steps.append(m["name"])
                progress(m["rank"], m["host"], step=m["name"])
                if on_step:
                    on_step(steps[-1])
            elif not (on_stderr and on_stderr(line)):
                tail.append(line)

    readers = [threading.Thread(target=read_stdout, daemon=True), threading.Thread(target=read_stderr, daemon=True)]
    for r in readers:
        r.start()
    timed_out = not_started = False
    silent: list[RankProgress] = []
    lost: dict[int, float] = {}
    given_up: dict[int, float] = {}   # on_lost's: ranks the job goes on without
    unreachable: dict[str, str] = {}
    # A launch slow to start is asked once which hosts answer (a fan-out's, whose hosts were just
    # asked by the survey's check, is not: it could only be stopped whole)
    ask_at = max(lost_limit, 0.25 * deadline) if deadline is not None and lost_limit and not on_lost else None
    try:
        while proc.poll() is None:
            now = time.monotonic()
            quiet = {r.rank: now - r.heard for r in list(ranks.values())
                     if r.rank not in given_up and r.lost(now, lost_limit)} if lost_limit else {}
            if quiet and on_lost:
                taken = set(on_lost(quiet, dict(ranks)))
                given_up.update({r: t for r, t in quiet.items() if r in taken})
                for r in set(quiet) - taken:   # alive after all: heard from now
                    ranks[r].heard = time.monotonic()
            elif quiet:
                alive = answering(quiet, ranks, spec)
                for r in alive:   # starved of CPU, not lost: heard from now
                    ranks[r].heard = time.monotonic()
                lost = {r: t for r, t in quiet.items() if r not in alive}
                if lost:
                    _stop(proc)
            elif done and done():
                _stop(proc)
            elif ask_at is not None and not heard.is_set() and now - start > ask_at:
                ask_at = None   # once: a launch slow to start is asked which of its hosts answer at all
                unreachable = starting(spec)
                if unreachable:
                    _stop(proc)
            elif now - start > limit():
                timed_out = True
                silent = sorted((r for r in list(ranks.values()) if r.silent(now)), key=lambda r: r.rank)
                _stop(proc)
            elif deadline is not None and not heard.is_set() and now - start > deadline:
                not_started = True
                _stop(proc)
            else:
                try:
                    proc.wait(min(0.25, max(0.01, start + limit() - now)))
                except subprocess.TimeoutExpired:
                    pass
    except BaseException:  # Ctrl-C, SIGTERM: take the ranks down with us
        _stop(proc)
        raise
    finally:
        os.close(lifeline_w)
    for reader, f in zip(readers, (job_out, job_err)):
        reader.join(5)
        if not reader.is_alive():   # else a process that escaped still writes: the thread keeps the file
            f.close()
    return JobResult(argv=argv, returncode=proc.returncode, stdout="".join(out), stderr_tail=list(tail),
                     duration=time.monotonic() - start, timed_out=timed_out,
                     last_step=steps[-1] if steps else None, steps=steps, not_started=not_started,
                     start_timeout=deadline, ranks=ranks, expected_ranks=spec.np if spec else None, silent=silent,
                     lost=lost, given_up=given_up, unreachable=unreachable)


def prepare(spec, launcher: str | None = None) -> list[str]:
    """The full argv for spec with the named (or default) launcher; bad input raises here, before any run starts."""
    got = get_launcher(launcher)
    argv = got.argv(spec)
    spec.launcher = got.name
    if spec.hosts:
        check_resolvable(spec.hosts)
    start_timeout(spec)   # a bad RMAX_START_TIMEOUT is refused now too
    lost_after()          # and a bad RMAX_LOST_AFTER
    return argv
