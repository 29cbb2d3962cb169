"""Cgroups of a pinned node: its own CPUs, as a real node has its own cores.

An affinity mask (taskset) does not confine MPI ranks: Open MPI's --bind-to core binds
them anew, outside the mask. A cpuset cgroup does: the kernel refuses any CPU outside
cpuset.cpus, and hwloc then sees only those cores (cpuset(7)). The cpuset keeps the nodes
off each other's CPUs, not the rest of the machine off theirs: so where the cpu controller
is at hand the node's cgroup also gets a CPU weight far above a plain process's, and what
runs on the node has its CPUs to itself whenever it wants them, as on a real node.

A node may also be slowed on purpose (`up --cpu-quota NODE=FRACTION`): its cgroup in the cpu
hierarchy (its own, or the pinned node's) gets a CFS quota of FRACTION of one CPU in every short
period (QUOTA_PERIOD_US), so that even the kernels' timed blocks of milliseconds see it, whatever
CPUs its processes run on.

Both cgroup versions are supported: v1, with a hierarchy per controller, and v2, where the
root offers the controllers (enabled for its children through cgroup.subtree_control; left
enabled at `down`, since other cgroups may rely on them)."""

from __future__ import annotations

import math
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from rmax.errors import RmaxError

MOUNTINFO = Path("/proc/self/mountinfo")
PREFIX = "rmax-vcluster-"   # every node cgroup's name starts so: one glance at a hierarchy finds them
# The node's weight, in plain processes: 100 busy processes elsewhere on its CPUs would get half of
# them. v1 cpu.shares: 1024 per process; v2 cpu.weight: 100 per process, 10000 at most (kernel
# docs, cgroup-v1/cgroups and cgroup-v2 "Weights").
WEIGHT = 100
# The CFS period of a node's quota: 10 ms, so that a timed block of a few ms is throttled every time
# (a long period lets a short block run whole in the period's first part). The kernel takes quotas
# of at least 1 ms and periods of 1 ms to 1 s (sched-bwc.rst): a smaller fraction gets a longer period.
QUOTA_PERIOD_US = 10_000
MIN_QUOTA_US, MAX_PERIOD_US = 1000, 1_000_000


@dataclass(frozen=True)
class Hierarchy:
    version: int                    # 1 or 2
    root: Path                      # its mount point
    controllers: tuple[str, ...]    # of cpuset and cpu, those this hierarchy gives the node

    def as_dict(self) -> dict:
        return {"version": self.version, "root": str(self.root), "controllers": list(self.controllers)}

    @classmethod
    def from_dict(cls, d: dict) -> "Hierarchy":
        return cls(d["version"], Path(d["root"]), tuple(d["controllers"]))


def _mounts(text: str) -> list[tuple[Path, str, list[str]]]:
    """(mount point, file system type, super options) of each line of /proc/self/mountinfo (proc(5))."""
    out = []
    for line in text.splitlines():
        left, sep, right = line.partition(" - ")
        if not sep:
            continue
        fields, tail = left.split(), right.split()
        if len(fields) >= 5 and len(tail) >= 3:
            # mount points escape spaces and the like as octal (\040)
            point = fields[4].encode().decode("unicode_escape")
            out.append((Path(point), tail[0], tail[2].split(",")))
    return out


def _offered(mountinfo: str | None) -> dict[str, Hierarchy]:
    """Controller (cpuset, cpu) -> the hierarchy that has it: v1 mounts naming the controllers, else a
    cgroup2 mount whose root offers them. A controller belongs to one hierarchy at a time."""
    try:
        text = MOUNTINFO.read_text() if mountinfo is None else mountinfo
    except OSError as e:
        raise RmaxError(f"cannot read {MOUNTINFO}: {e.strerror}") from None
    found: dict[str, Hierarchy] = {}
    for point, fstype, opts in _mounts(text):
        if fstype == "cgroup":
            have = tuple(c for c in ("cpuset", "cpu") if c in opts)
            version = 1
        elif fstype == "cgroup2":
            try:
                offered = (point / "cgroup.controllers").read_text().split()
            except OSError:
                continue
            have = tuple(c for c in ("cpuset", "cpu") if c in offered)
            version = 2
        else:
            continue
        for c in have:
            found.setdefault(c, Hierarchy(version, point, have))
    return found


def find_hierarchies(mountinfo: str | None = None) -> list[Hierarchy]:
    """The hierarchies that give a node its cpuset and, where there is one, its cpu weight.
    Without cpuset, pinning is refused; without cpu, the node has no weight."""
    found = _offered(mountinfo)
    if "cpuset" not in found:
        raise RmaxError("pinning nodes to CPUs needs the cpuset cgroup controller, and no cgroup v1 hierarchy "
                        "has it and no cgroup2 hierarchy offers it",
                        hint="mount one (mount -t cgroup -o cpuset none /sys/fs/cgroup/cpuset), or go without --pin-cpus")
    return list(dict.fromkeys(found.values()))   # v2 (or co-mounted v1): one hierarchy for both


def find_cpu_hierarchy(mountinfo: str | None = None) -> Hierarchy:
    """The hierarchy with the cpu controller, which a node's CPU quota needs (the cpu controller only)."""
    found = _offered(mountinfo)
    if "cpu" not in found:
        raise RmaxError("--cpu-quota needs the cpu cgroup controller, and no cgroup v1 hierarchy has it and no "
                        "cgroup2 hierarchy offers it",
                        hint="mount one (mount -t cgroup -o cpu none /sys/fs/cgroup/cpu), or go without --cpu-quota")
    h = found["cpu"]
    return Hierarchy(h.version, h.root, ("cpu",))


def quota_period(fraction: float) -> int:
    """The CFS period (us) of a quota of `fraction` of one CPU: QUOTA_PERIOD_US, or as long as a
    quota of at least MIN_QUOTA_US needs."""
    return min(MAX_PERIOD_US, max(QUOTA_PERIOD_US, math.ceil(MIN_QUOTA_US / fraction)))


def has_quota(d: Path) -> bool:
    """The cgroup has the cpu controller's quota (v2 cpu.max or v1 cpu.cfs_quota_us)."""
    return (d / "cpu.max").exists() or (d / "cpu.cfs_quota_us").exists()


def set_quota(d: Path, fraction: float | None, period_us: int | None = None) -> None:
    """Cap cgroup d at `fraction` of one CPU in every period of `period_us` (default: quota_period);
    None: no cap."""
    period_us = period_us or (quota_period(fraction) if fraction else QUOTA_PERIOD_US)
    quota = max(MIN_QUOTA_US, int(period_us * fraction)) if fraction else -1
    if (d / "cpu.cfs_quota_us").exists():   # v1
        _write(d / "cpu.cfs_period_us", str(period_us), f"the CPU quota of {d.name}")
        _write(d / "cpu.cfs_quota_us", str(quota), f"the CPU quota of {d.name}")
    else:
        _write(d / "cpu.max", f"{quota if quota > 0 else 'max'} {period_us}", f"the CPU quota of {d.name}")


def read_quota(d: Path) -> tuple[int, int] | None:
    """(quota, period) in us of cgroup d as the kernel holds it; None without a quota (or the file)."""
    try:
        if (d / "cpu.cfs_quota_us").exists():
            quota, period = int((d / "cpu.cfs_quota_us").read_text()), int((d / "cpu.cfs_period_us").read_text())
        else:
            q, p = (d / "cpu.max").read_text().split()
            quota, period = (-1 if q == "max" else int(q)), int(p)
    except (OSError, ValueError):
        return None
    return (quota, period) if quota > 0 else None


def cgroup_dir(h: Hierarchy, node: str) -> Path:
    return h.root / f"{PREFIX}{node}"


def _write(path: Path, value: str, what: str) -> None:
    try:
        path.write_text(value)
    except OSError as e:
        raise RmaxError(f"{what}: writing '{value}' to {path} failed: {e.strerror}") from None


def create(h: Hierarchy, d: Path, cpus: list[int], weight: bool = True) -> None:
    """The node's cgroup d in hierarchy h: confined to cpus, weighted (unless not `weight`: a node
    that only has a quota competes as a plain process), as h's controllers allow."""
    if h.version == 2:
        control = h.root / "cgroup.subtree_control"
        missing = [c for c in h.controllers if c not in control.read_text().split()]
        if missing:
            _write(control, " ".join(f"+{c}" for c in missing), "enabling cgroup controllers")
    try:
        d.mkdir()
    except FileExistsError:
        pass          # left by an earlier cluster of this name that was never taken down: reused
    except OSError as e:
        raise RmaxError(f"creating cgroup {d} failed: {e.strerror}") from None
    if "cpuset" in h.controllers:
        _write(d / "cpuset.cpus", ",".join(map(str, cpus)), f"confining {d.name}")
        if h.version == 1:
            # v1 admits no task to a cpuset whose mems are empty (cpuset(7)); v2 inherits its parent's.
            _write(d / "cpuset.mems", (h.root / "cpuset.mems").read_text().strip(), f"confining {d.name}")
    if "cpu" in h.controllers and weight:
        if h.version == 1:
            _write(d / "cpu.shares", str(1024 * WEIGHT), f"weighting {d.name}")
        else:
            _write(d / "cpu.weight", str(100 * WEIGHT), f"weighting {d.name}")


def procs_file(d: Path) -> Path:
    """Writing a PID here moves that process (and so all it starts later) into the cgroup."""
    return d / "cgroup.procs"


def pids(d: Path) -> list[int]:
    try:
        return [int(p) for p in procs_file(d).read_text().split()]
    except OSError:
        return []


def remove(d: Path) -> bool:
    """Kill what is left in cgroup d (by PID), then remove it; True when it existed. A cgroup that
    still holds a process cannot be removed (EBUSY), and a killed one leaves it a moment later."""
    if not d.is_dir():
        return False
    if read_quota(d):
        # a killed process still needs CPU time to exit: under a small quota on a loaded machine
        # its exit waits for the cgroup's next periods, so the cap goes first
        try:
            set_quota(d, None)
        except RmaxError:
            pass
    deadline = time.monotonic() + 30
    while True:
        for pid in pids(d):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            d.rmdir()
            return True
        except FileNotFoundError:
            return True
        except OSError:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)
