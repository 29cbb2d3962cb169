"""A run's lease: renewed while its process runs; a row of another host whose lease lapsed is
reaped to `interrupted` by whoever opens the store, a row of this host keeps its process check."""

from __future__ import annotations

import json
import os
import socket
import time

import pytest

from rmax.errors import RmaxError
from rmax.store import lease, open_store
from rmax.store.runs import new_record, process_identity


def _insert(store, hostname: str, lease_until: float | None, pid: int = 999999, proc_start: str | None = "x:1") -> str:
    rec = new_record("demo", hosts=[hostname])
    rec.hostname, rec.pid, rec.proc_start, rec.lease_until = hostname, pid, proc_start, lease_until
    cols = list(rec.__dict__)
    vals = [json.dumps(v) if isinstance(v, (list, dict)) else v for v in rec.__dict__.values()]
    store.con.execute(f"INSERT INTO runs ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})", vals)
    return rec.id


def test_another_hosts_run_is_reaped_when_its_lease_lapses_and_not_before(db):
    now = time.time()
    with open_store() as s:
        lapsed = _insert(s, "node-7", now - 1)
        held = _insert(s, "node-8", now + 30)
        old = _insert(s, "node-9", None)          # a row from before leases: nothing to judge it by
        mine = _insert(s, socket.gethostname(), now - 100, pid=os.getpid(), proc_start=process_identity())
    with open_store() as s:                       # opening reaps
        status = {r.id: r for r in s.list()}
        s.delete(lapsed)
        with pytest.raises(RmaxError, match="still running .* on node-8"):
            s.delete(held)
    assert status[lapsed].status == "interrupted"
    assert "lease lapsed" in status[lapsed].error and "on node-7" in status[lapsed].error
    assert status[held].status == status[old].status == "running"
    assert status[mine].status == "running"      # its process (this one) runs: the lease is not what decides


def test_a_running_run_renews_its_lease_and_stops_when_the_store_closes(db, monkeypatch):
    monkeypatch.setattr(lease, "RENEW_S", 0.05)
    with open_store() as s:
        run = s.start_run("demo")
        first = s.con.execute("SELECT lease_until FROM runs WHERE id = ?", (run.id,)).fetchone()[0]
        assert first > time.time() + lease.LEASE_S - 5
        deadline = time.monotonic() + 10
        while s.con.execute("SELECT lease_until FROM runs WHERE id = ?", (run.id,)).fetchone()[0] == first:
            assert time.monotonic() < deadline, "the lease was never renewed"
            time.sleep(0.05)
        run.finish("ok")
        keeper = s._lease
    assert not keeper._thread.is_alive()
