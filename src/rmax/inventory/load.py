"""How busy this node is: a reading cheap enough to take at the start and end of every stored run.

One reading is a few small /proc reads and no waiting (about 0.2 ms of CPU): the load average, the tasks
runnable now, the CPU time the whole machine has spent busy (/proc/stat) and the CPU time of this
process and every process under it, ended ones included. Between two readings, the CPU time of the
machine less our own is what *other* processes used: another user's busy loop counts, the run's own
kernels and rmax's other work do not (the load average cannot tell them apart, and lags by a minute).
The processes under rmax are found through /proc/PID/task/TID/children, or where the kernel lacks
that file, from every process's parent. Only this host is read: the ranks of a multi-node run on
other hosts are not seen here.

A CPU quota is busy too: a cgroup's quota (cgroup v2 cpu.max, v1 cpu.cfs_quota_us) on rmax's cgroup
or one above it caps the run however idle the machine is, and the time its group was throttled
(cpu.stat: throttled_usec, v1 throttled_time) between two readings is time the run could not run."""

from __future__ import annotations

import os
import time
from contextlib import contextmanager
from dataclasses import dataclass

TICK = os.sysconf("SC_CLK_TCK")
BUSY_CPUS = 0.5     # other processes using this many CPUs on average make a node busy (as the agent's max_load)
BUSY_THROTTLED = 0.05   # throttled by a CPU quota this share of the time makes it busy
MIN_WINDOW = 1.0    # seconds: over a shorter run, clock ticks (10 ms) decide: judged with their error allowed


def _text(path: str) -> str:
    """A small /proc file's text: os calls, no buffered file object (a reading is taken for every run)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        parts = [os.read(fd, 1 << 16)]
        while len(parts[-1]) == 1 << 16:   # /proc/stat of a many-CPU machine is longer
            parts.append(os.read(fd, 1 << 16))
        return b"".join(parts).decode()
    finally:
        os.close(fd)


def proc_fields(path: str) -> list[str] | None:
    """Fields of a /proc stat file after the command name (which may hold spaces): state first."""
    try:
        text = _text(path)
    except OSError:   # the task ended while we looked
        return None
    return text.rsplit(")", 1)[1].split()


_HAS_CHILDREN_FILE: list[bool] = []   # decided on first use: CONFIG_PROC_CHILDREN


def _children(pid: int) -> list[int]:
    kids: list[int] = []
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return kids
    for tid in tids:
        try:
            kids += [int(k) for k in _text(f"/proc/{pid}/task/{tid}/children").split()]
        except OSError:
            continue
    return kids


def descendants(pid: int) -> set[int]:
    """Every live process under pid (not pid itself)."""
    if not _HAS_CHILDREN_FILE:
        _HAS_CHILDREN_FILE.append(os.path.exists(f"/proc/{os.getpid()}/task/{os.getpid()}/children"))
    if _HAS_CHILDREN_FILE[0]:
        found, todo = set(), [pid]
        while todo:
            kids = [k for k in _children(todo.pop()) if k not in found]
            found.update(kids)
            todo += kids
        return found
    parent = {}
    for name in os.listdir("/proc"):
        f = proc_fields(f"/proc/{name}/stat") if name.isdigit() else None
        if f:
            parent[int(name)] = int(f[1])
    found, grew = set(), True
    while grew:
        new = {p for p, pp in parent.items() if (pp == pid or pp in found) and p not in found}
        found |= new
        grew = bool(new)
    return found


def own_cpu_seconds() -> float:
    """CPU seconds of this process, of its children it has waited for, and of every live process under
    it (with the children those have waited for): the whole tree's work so far."""
    t = os.times()
    ticks = 0
    for pid in descendants(os.getpid()):
        f = proc_fields(f"/proc/{pid}/stat")
        if f:   # utime, stime, cutime, cstime
            ticks += sum(int(x) for x in f[11:15])
    return t.user + t.system + t.children_user + t.children_system + ticks / TICK


_CPU_MOUNTS: list[tuple[int, str, str]] = []   # (cgroup version, mount point, its root in the hierarchy)


def _cpu_mounts() -> list[tuple[int, str, str]]:
    """Where the cgroup hierarchies with the cpu controller are mounted (proc(5): mountinfo), read once."""
    if not _CPU_MOUNTS:
        try:
            lines = _text("/proc/self/mountinfo").splitlines()
        except OSError:
            lines = []
        for line in lines:
            head, _, tail = line.partition(" - ")
            f, t = head.split(), tail.split()
            if len(f) >= 5 and len(t) >= 3:
                if t[0] == "cgroup" and "cpu" in t[2].split(","):
                    _CPU_MOUNTS.append((1, f[4], f[3]))
                elif t[0] == "cgroup2":
                    _CPU_MOUNTS.append((2, f[4], f[3]))
        _CPU_MOUNTS.append((0, "", ""))   # read: none is not looked for again
    return [m for m in _CPU_MOUNTS if m[0]]


def _cpu_cgroups() -> list[tuple[int, str]]:
    """(version, folder) of this process's cpu cgroup and of each one above it, up to the mount."""
    try:
        lines = _text("/proc/self/cgroup").splitlines()
    except OSError:
        return []
    mounts = _cpu_mounts()
    v1 = next((m for m in mounts if m[0] == 1), None)
    for line in lines:
        num, controllers, path = line.split(":", 2)
        if v1 and "cpu" in controllers.split(","):
            version, mount, root = v1
        elif not v1 and num == "0" and any(m[0] == 2 for m in mounts):
            version, mount, root = next(m for m in mounts if m[0] == 2)
        else:
            continue
        rel = path[len(root):] if root != "/" and path.startswith(root) else path
        parts = [p for p in rel.split("/") if p]
        return [(version, os.path.join(mount, *parts[:i])) for i in range(len(parts), -1, -1)]
    return []


def cpu_quota() -> tuple[float | None, float, str | None]:
    """(the CPU quota of this process's cgroups in CPUs, the smallest one above it, or None when there
    is none; CPU-seconds they were throttled since they were made, summed; the folder of that quota)."""
    quota, where, throttled = None, None, 0.0
    for version, folder in _cpu_cgroups():
        try:
            if version == 2:
                limit, period = (_text(f"{folder}/cpu.max").split() + ["100000"])[:2]
                q = None if limit == "max" else int(limit) / int(period)
                stat = dict(line.split() for line in _text(f"{folder}/cpu.stat").splitlines() if " " in line)
                throttled += int(stat.get("throttled_usec", 0)) / 1e6
            else:
                limit = int(_text(f"{folder}/cpu.cfs_quota_us"))
                q = None if limit < 0 else limit / int(_text(f"{folder}/cpu.cfs_period_us"))
                stat = dict(line.split() for line in _text(f"{folder}/cpu.stat").splitlines() if " " in line)
                throttled += int(stat.get("throttled_time", 0)) / 1e9
        except (OSError, ValueError):   # the root has no cpu.max; a folder removed meanwhile
            continue
        if q is not None and (quota is None or q < quota):
            quota, where = q, folder
    return quota, throttled, where


@dataclass(frozen=True)
class Reading:
    load1: float      # the load average over 1, 5 and 15 minutes (/proc/loadavg)
    load5: float
    load15: float
    running: int      # tasks runnable on the machine now, this reader not counted
    cpus: int         # the CPUs /proc/stat counts
    busy_s: float     # CPU seconds the machine spent busy since boot, all CPUs (steal included)
    total_s: float    # CPU seconds since boot, all CPUs, idle included
    own_s: float      # CPU seconds of rmax's process tree (own_cpu_seconds)
    quota: float | None = None   # the CPU quota of rmax's cgroup, in CPUs (cpu_quota); None: none
    throttled_s: float = 0.0     # seconds its cgroups were throttled, summed (stored before: 0)

    def as_dict(self) -> dict:
        return dict(self.__dict__)    # not dataclasses.asdict, whose deep copy costs more than the reading


FRESH_S = 0.1   # a reading this recent is reused: a survey stores a step's runs of 64 nodes at once,
               # and each reading walks rmax's process tree (4 processes a node during a fan-out)
_last: tuple[float, Reading | None] | None = None
_held: list[bool] = []   # inside held(): the block's first reading is reused, however old


def read() -> Reading | None:
    """This node's reading now (or one taken less than FRESH_S ago, or the first one of a held()
    block); None where /proc cannot be read."""
    global _last
    now = time.monotonic()
    if _held and _held[-1]:
        return _last[1] if _last else None
    if _last is None or now - _last[0] >= FRESH_S:
        _last = (now, _read())
    if _held:
        _held[-1] = True
    return _last[1]


@contextmanager
def held():
    """The runs stored inside take one reading between them, the block's first: a survey stores n
    nodes' runs of a step at once, and on a machine its nodes share (a virtual cluster) each reading
    walks their hundreds of processes, while they leave rmax a sliver of the cores (64 nodes on 2
    cores: 0.5 s each, most of a step's storing)."""
    _held.append(False)
    try:
        yield
    finally:
        _held.pop()


def _read() -> Reading | None:
    try:
        l1, l5, l15 = (float(x) for x in _text("/proc/loadavg").split()[:3])
        text = _text("/proc/stat")
        # "cpu  user nice system idle iowait irq softirq steal ..." (guest time is inside user already)
        user, nice, system, idle, iowait, irq, softirq, steal = (int(x) for x in text.split("\n", 1)[0].split()[1:9])
        running = int(text.split("\nprocs_running ", 1)[1].split(None, 1)[0])
    except (OSError, ValueError, IndexError):
        return None
    busy = user + nice + system + irq + softirq + steal
    cpus = text.count("\ncpu")   # one line per CPU after the machine's
    quota, throttled, _ = cpu_quota()
    return Reading(l1, l5, l15, max(0, running - 1), cpus, busy / TICK, (busy + idle + iowait) / TICK,
                   own_cpu_seconds(), quota, throttled)


@dataclass(frozen=True)
class Verdict:
    """Others' use of this node between two readings: `others` CPUs on average over `seconds`, the
    share of that time a CPU quota throttled rmax (`throttled`) and the quota (CPUs, None: none)."""
    others: float
    seconds: float
    load1: float      # the load average at the start
    throttled: float = 0.0
    quota: float | None = None
    error: float = 0.0    # how far `others` may be off: a clock tick per CPU, over a short window

    @property
    def busy(self) -> bool:
        return self.others - self.error >= BUSY_CPUS or self.throttled >= BUSY_THROTTLED

    def line(self, host: str | None = None) -> str:
        """What was busy, on `host`: the host the readings were taken on (where rmax ran)."""
        on = f" on {host}" if host else ""
        parts = []
        if self.others - self.error >= BUSY_CPUS or not self.throttled >= BUSY_THROTTLED:
            parts.append(f"other processes{on} used {self.others:.1f} CPUs on average over its {self.seconds:.3g} s "
                         f"(load average {self.load1:.1f} at its start)")
        if self.throttled >= BUSY_THROTTLED:
            cap = f"a CPU quota of {self.quota:.2g} CPUs" if self.quota is not None else "a CPU quota"
            parts.append(f"{cap} throttled rmax{on} {100 * self.throttled:.0f}% of its {self.seconds:.3g} s")
        return "; ".join(parts)


def busy_line(stored: dict, host: str | None = None) -> str | None:
    """How busy the node was while a run measured (its stored readings), when it was busy; else None."""
    v = verdict(stored or {})
    return v.line(host) if v and v.busy else None


def verdict(stored: dict) -> Verdict | None:
    """The verdict of a run's stored readings ({"start": ..., "end": ...}); None without both. A run of
    any length is judged: over a window shorter than MIN_WINDOW the clock ticks' error (one a CPU at
    each reading) is allowed for, so that only a sure excess is called busy; throttling is counted
    in microseconds, whatever the window."""
    try:
        a, b = Reading(**stored["start"]), Reading(**stored["end"])
        if not a.cpus or a.cpus != b.cpus:
            return None
        seconds = (b.total_s - a.total_s) / a.cpus
        if not seconds > 0:
            return None
        others = ((b.busy_s - a.busy_s) - (b.own_s - a.own_s)) / seconds
        error = 2 * a.cpus / TICK / seconds if seconds < MIN_WINDOW else 0.0
        throttled = min(1.0, max(0.0, b.throttled_s - a.throttled_s) / seconds)
        return Verdict(max(0.0, others), seconds, float(a.load1), throttled, a.quota, error)
    except (KeyError, TypeError, ValueError):   # no reading, or one edited by hand
        return None
