"""Nodes that share one machine (a virtual cluster's) take turns at a per-node step: one node at a
time measures, alone on the machine as a real node is on its own, while the others wait. Measured at
once, k nodes on c cores each get c/k of a CPU: a node slowed to 0.4 of a CPU (vcluster's
--cpu-quota) is then no slower than its siblings (6 nodes on 2 cores: 0.33 each), and every node's
figure carries the others' scheduling noise.

The turn order is (step, rank): a node that finished step i and waits for step i+1 goes after every
node still waiting for step i, so that a step is over on every node before the next one starts
(fanout.py's limits count the steps one after the other). Each node waiting puts an entry in a
folder of this user's alone on its machine, named for the launch (`key`), the step and its rank, and
holds a shared lock on it while it waits; the first live entry's node takes the seat, an exclusive
lock on the launch's seat file, and measures. An entry whose node has gone (its lock with it) is
skipped and removed, so a node killed while waiting holds no one up. Standard library only: the
node worker (node_worker.py) imports this on every node."""

from __future__ import annotations

import fcntl
import os
import stat
import time

POLL_S = 0.02     # how often a waiting node looks whether its turn has come
KEEP_S = 3600.0   # older files of finished launches are removed
ENTRY = ".q"


def ours(folder: str) -> int | None:
    """The folder, made if missing, opened (a descriptor) when it is this user's alone and no link; else None."""
    try:
        os.mkdir(folder, 0o700)
    except FileExistsError:
        pass
    except OSError:
        return None
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    st = os.fstat(fd)
    if stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o077:
        return fd
    os.close(fd)
    return None


class Turn:
    """Node `me`'s turn at step `step` of launch `key` in `folder`: take(until) waits for it, and
    the seat is held until release() (or the end of a `with`)."""

    def __init__(self, folder: int, key: str, step: int, me: int):
        self.folder, self.key = folder, key
        self.name = f"{key}.{step:06d}.{me:07d}{ENTRY}"
        self.entry: int | None = None
        self.seat: int | None = None

    def take(self, until: float) -> bool:
        """Wait in line until this node's turn (True) or time.monotonic() reaches `until` (False)."""
        self._enter()
        try:
            while True:
                if self._first() == self.name and self._sit():
                    return True
                if time.monotonic() >= until:
                    return False
                time.sleep(POLL_S)
        finally:
            self._leave()

    def release(self) -> None:
        if self.seat is not None:
            os.close(self.seat)
            self.seat = None

    def __enter__(self) -> "Turn":
        return self

    def __exit__(self, *exc) -> None:
        self.release()

    def _enter(self) -> None:
        """This node's entry in the line, locked before it is visible under its name (made under a
        temporary one, then renamed): no one may take it for a gone node's."""
        tmp = f".{self.name}.{os.urandom(8).hex()}.tmp"
        fd = os.open(tmp, os.O_RDONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=self.folder)
        fcntl.flock(fd, fcntl.LOCK_SH)
        os.rename(tmp, self.name, src_dir_fd=self.folder, dst_dir_fd=self.folder)
        self.entry = fd

    def _leave(self) -> None:
        try:
            os.unlink(self.name, dir_fd=self.folder)
        except OSError:
            pass
        if self.entry is not None:
            os.close(self.entry)
            self.entry = None

    def _first(self) -> str | None:
        """The first live entry of this launch's line; gone nodes' entries are removed on the way."""
        for name in sorted(n for n in os.listdir(self.folder) if n.startswith(self.key + ".") and n.endswith(ENTRY)):
            if name == self.name or alive(self.folder, name):
                return name
        return None

    def _sit(self) -> bool:
        fd = os.open(f"{self.key}.seat", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=self.folder)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        os.utime(fd)   # in use: no sweep of another launch's takes it
        self.seat = fd
        return True


def alive(folder: int, name: str) -> bool:
    """Whether the node of entry `name` still waits (holds its lock); a gone node's entry is removed."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=folder)
    except OSError:
        return False   # taken away meanwhile: its node has its turn, or is gone
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    try:
        os.unlink(name, dir_fd=folder)
    except OSError:
        pass
    return False


def sweep(folder: int, now: float | None = None) -> None:
    """Remove the seat files and entries of launches over KEEP_S ago."""
    now = time.time() if now is None else now
    for name in os.listdir(folder):
        if name.endswith((".seat", ENTRY)):
            try:
                if now - os.stat(name, dir_fd=folder, follow_symlinks=False).st_mtime > KEEP_S:
                    os.unlink(name, dir_fd=folder)
            except OSError:
                pass
