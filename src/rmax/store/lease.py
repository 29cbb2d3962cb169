"""A run's lease: how a store shared between hosts learns that a run's process is gone.

Every `running` row carries `lease_until` (Unix time): the process that owns
the run vouches until then that it still runs. A thread of that process, with
a connection of its own, renews the leases of all its running rows every
RENEW_S seconds to LEASE_S ahead, so a lease lapses only when the process (or
its host, or its host's way to the store) is gone. Whoever opens the store
marks a row of another host whose lease has expired `interrupted`
(runs.reap_orphans); a row of its own host keeps the exact check of its
process. Hosts sharing a store need clocks within seconds of each other (NTP),
as lease times are compared across them."""

from __future__ import annotations

import os
import socket
import threading
import time
from pathlib import Path

from rmax.errors import RmaxError
from rmax.store.connection import open_connection

RENEW_S = 10.0    # between renewals
LEASE_S = 45.0    # a lease's length: four renewals may fail (a store busy for BUSY_TIMEOUT) before it lapses


def expiry() -> float:
    """The lease_until of a row renewed now."""
    return time.time() + LEASE_S


class LeaseKeeper:
    """Renews the leases of this process's running rows in one store until stopped."""

    def __init__(self, path: Path, identity: str | None):
        self.path, self.identity = path, identity
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rmax-lease", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        con = None
        try:
            while not self._stopped.wait(RENEW_S):
                try:
                    con = con or open_connection(self.path)
                    con.execute("UPDATE runs SET lease_until = ? WHERE status = 'running' AND hostname = ? "
                                "AND pid = ? AND proc_start IS ?",
                                (expiry(), socket.gethostname(), os.getpid(), self.identity))
                except RmaxError:
                    pass   # busy or unreachable now: the next renewal tries again, well within the lease
        finally:
            if con is not None:
                con.close()

    def stop(self) -> None:
        self._stopped.set()
        self._thread.join(1.0)   # a renewal waiting on a busy store ends by itself; the thread is a daemon
