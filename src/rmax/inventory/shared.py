"""A survey's inventory on every node at once, the sections that are the same on every node of one
machine (collect.MACHINE_SECTIONS: caches, MPI, compilers, BLAS) read by one node of that machine,
the first to come, and reused by its others.

Nodes are one machine here when they share the boot (boot id), the file system (mount namespace),
the user, the CPU set (hwloc's caches depend on it) and the environment the probes read (PATH, the
library path, BLAS and OpenMP variables, Slurm's configuration): then every one of those probes
(about 15 programs started: mpirun --version, cc, mpicc, lstopo, a BLAS load, dpkg) would answer
the same. On a real cluster every node is its own machine and reads its own; a virtual cluster's
64 nodes on one host read them once instead of 64 times. A node says which node read them
(`machine_sections_read_on`). The sharing is scoped to one survey (its id is in the key), so a
later survey reads the software again.

The sections go through a file in a folder of this user's alone (0700, checked), written whole
(write_atomic) under a lock that the reader holds while it probes; anything amiss with the folder
or the lock, and the node reads its own sections."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import stat
import tempfile
import time
from pathlib import Path

from rmax.inventory.collect import collect

ENVIRONMENT = ("PATH", "LD_LIBRARY_PATH", "LD_PRELOAD", "SLURM_CONF")   # what the software probes read
SEARCH_PATHS = ("PATH", "LD_LIBRARY_PATH")   # searched in order: a folder listed again is not searched again
PREFIXES = ("OPENBLAS_", "OMP_", "MKL_", "BLIS_", "GOTO", "FLEXIBLAS", "RMAX_BLAS")
WAIT_S = 30.0       # how long a node waits for another's probes before it reads its own
KEEP_S = 3600.0     # older files of finished surveys are removed


def collect_node(measure: bool, unmeasured: str, survey: str | None = None) -> dict:
    """This node's inventory (collect); within `survey`, the machine's sections shared as above."""
    if not survey:
        return collect(measure, unmeasured)
    return collect(measure, unmeasured, reuse=lambda read: reuse(survey, read))


def machine_key(survey: str) -> str:
    """What nodes of one machine have in common, as the sharing's key (see the module's text)."""
    def ident(path: str) -> str:
        try:
            st = os.stat(path)
            return f"{st.st_dev}:{st.st_ino}"
        except OSError:
            return "?"

    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            boot = f.read().strip()
    except OSError:
        boot = "?"
    # Open MPI's daemons put their prefix's folders on PATH and LD_LIBRARY_PATH once more, and the
    # first node's rank, started by mpirun itself, had one copy fewer: the same search, another key.
    env = sorted((k, searched(v) if k in SEARCH_PATHS else v) for k, v in os.environ.items()
                 if k in ENVIRONMENT or k.startswith(PREFIXES))
    parts = [survey, os.getuid(), boot, ident("/proc/self/ns/mnt"), ident("/"), sorted(os.sched_getaffinity(0)), env]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:32]


def searched(value: str) -> str:
    """A search path as it is searched: each folder at its first place only."""
    return ":".join(dict.fromkeys(value.split(":")))


def folder() -> Path | None:
    """This user's private folder for the shared sections, or None when it is not safely ours."""
    d = Path(tempfile.gettempdir()) / f"rmax-inventory-{os.getuid()}"
    try:
        os.mkdir(d, 0o700)
    except FileExistsError:
        pass
    except OSError:
        return None
    try:
        st = os.lstat(d)
    except OSError:
        return None
    ours = stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o077
    return d if ours else None


def reuse(survey: str, read) -> tuple[dict, dict, str]:
    """The machine's sections (results, errors, the host that read them): another node's of this
    survey on this machine, else read() here, kept for the others."""
    from rmax.textfile import write_atomic

    host = os.uname().nodename
    d = folder()
    if d is None:
        return (*read(), host)
    key = machine_key(survey)
    path = d / f"{key}.json"
    try:
        lock = os.open(d / f"{key}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError:
        return (*read(), host)
    try:
        held = _wait_lock(lock)
        kept = _load(path)
        if kept:
            return kept["results"], kept["errors"], kept["read_on"]
        results, errors = read()
        if held:
            try:
                write_atomic(path, json.dumps({"results": results, "errors": errors, "read_on": host}),
                             mode=0o600, folder_is_ours=True)
            except Exception:   # the others read their own
                pass
            _prune(d)
        return results, errors, host
    finally:
        os.close(lock)   # and its lock with it


def _wait_lock(fd: int) -> bool:
    deadline = time.monotonic() + WAIT_S
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)
        except OSError:
            return False


def _load(path: Path) -> dict | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        with os.fdopen(fd) as f:
            kept = json.load(f)
    except (OSError, ValueError):
        return None
    ok = isinstance(kept, dict) and isinstance(kept.get("results"), dict) and isinstance(kept.get("errors"), dict) \
        and isinstance(kept.get("read_on"), str)
    return kept if ok else None


def _prune(d: Path) -> None:
    """Remove the files of surveys long finished (a survey's inventory takes seconds)."""
    now = time.time()
    for p in d.iterdir():
        try:
            if now - p.lstat().st_mtime > KEEP_S:
                p.unlink()
        except OSError:
            pass
