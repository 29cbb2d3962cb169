"""The Store: start runs, find them, delete them."""

from __future__ import annotations

import json
import socket
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rmax.errors import RmaxError
from rmax.store.connection import damaged
from rmax.store.db import connect, connect_readonly, default_path, writable
from rmax.store.lease import LeaseKeeper
from rmax.store.runs import JSON_COLUMNS, Run, RunRecord, alive, interrupt_own, new_record, reap_orphans, resolve_id

# The stores this process started runs in: a stop that lands between a run's row and its `with`
# block leaves the row running, and the process's last act marks it (stopped_here).
_STARTED: set[Path] = set()


class Store:
    def __init__(self, path: Path | str | None = None, reading: bool = False):
        """`reading`: for a command that only reads: no store is created where there is none, and
        one this process may not write is opened read-only (its orphans are left to a writer)."""
        self.path = Path(path) if path else default_path()
        self.readonly = reading and (not self.path.exists() or not writable(self.path))
        self._lease: LeaseKeeper | None = None   # renews this process's runs' leases once it starts one
        if self.readonly:
            self.con = connect_readonly(self.path)
            return
        self.con = None
        try:
            self.con = connect(self.path)
            reap_orphans(self)
        except RmaxError as first:
            if self.con is not None:
                self.con.close()
            if not reading:
                raise
            try:   # a full disk refuses the writes that opening does: a reader still reads
                self.con, self.readonly = connect_readonly(self.path), True
            except RmaxError:
                raise first from None

    def close(self) -> None:
        if self._lease:
            self._lease.stop()
        self.con.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def start_run(self, kind: str, **fields: Any) -> Run:
        """Insert the run's row now, status running, and return its handle."""
        rec = new_record(kind, **fields)
        cols = list(rec.__dict__)
        vals = [json.dumps(v) if c in JSON_COLUMNS else v for c, v in rec.__dict__.items()]
        _STARTED.add(self.path)
        self.con.execute(f"INSERT INTO runs ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})", vals)
        self._lease = self._lease or LeaseKeeper(self.path, rec.proc_start)
        return Run(self, rec)

    def _record(self, row) -> RunRecord:
        try:
            return RunRecord.from_row(row)
        except (ValueError, TypeError) as e:
            raise damaged(self.path, f"run {row['id']} has a malformed stored field: {e}") from None

    def get(self, id_or_prefix: str) -> RunRecord:
        run_id = resolve_id(self, id_or_prefix)
        return self._record(self.con.execute("SELECT * FROM runs WHERE id = ?", (run_id,)).fetchone())

    def child_ids(self, run_id: str) -> set[str]:
        """The ids of the runs grouped under run_id, without reading the runs (a survey's are hundreds)."""
        return {r["id"] for r in self.con.execute("SELECT id FROM runs WHERE parent = ?", (run_id,))}

    def get_many(self, ids: list[str]) -> list[RunRecord]:
        """The runs of these full ids, in that order (a survey's n nodes' runs of a step), read in a
        few queries instead of one each; an id not stored is left out."""
        got: dict[str, RunRecord] = {}
        for i in range(0, len(ids), 500):   # within SQLite's bound on a statement's parameters
            chunk = ids[i:i + 500]
            rows = self.con.execute(f"SELECT * FROM runs WHERE id IN ({', '.join('?' * len(chunk))})", chunk)
            got.update((r["id"], self._record(r)) for r in rows)
        return [got[i] for i in ids if i in got]

    @contextmanager
    def batch(self):
        """The statements inside written in one commit, not one each (a node's run completed in a
        few updates, n nodes' rows inserted at once): what each wrote is kept as without the batch,
        also when the block raises. Inside another batch it is part of that one."""
        if self.con.in_transaction:
            yield
            return
        self.con.execute("BEGIN IMMEDIATE")
        try:
            yield
        finally:
            self.con.execute("COMMIT")

    def list(self, kind: str | None = None, status: str | None = None, parent: str | None = None,
             limit: int | None = None, label: str | None = None, hostname: str | None = None) -> list[RunRecord]:
        where, args = [], []
        for col, val in (("kind", kind), ("status", status), ("parent", parent), ("label", label),
                         ("hostname", hostname)):
            if val is not None:
                where.append(f"{col} = ?")
                args.append(val)
        sql = "SELECT * FROM runs" + (" WHERE " + " AND ".join(where) if where else "")
        sql += " ORDER BY started_at DESC"
        if limit:
            sql += f" LIMIT {int(limit)}"
        return [self._record(r) for r in self.con.execute(sql, args)]

    def kinds(self) -> list[str]:
        """The kinds of the runs stored, in name order."""
        return [r["kind"] for r in self.con.execute("SELECT DISTINCT kind FROM runs ORDER BY kind")]

    def keep_headlines(self, lines: dict[str, str]) -> None:
        """Store the list view's lines of runs (id -> line) stored without one, in one commit."""
        with self.batch():
            self.con.executemany("UPDATE runs SET headline = ? WHERE id = ? AND headline IS NULL",
                                 [(line, i) for i, line in lines.items()])

    def hostnames(self, label: str) -> list[str]:
        """The hosts that stored runs with this label, in name order."""
        rows = self.con.execute("SELECT DISTINCT hostname FROM runs WHERE label = ? ORDER BY hostname", (label,))
        return [r["hostname"] for r in rows if r["hostname"]]

    def children(self, run_id: str) -> list[RunRecord]:
        rows = self.con.execute("SELECT * FROM runs WHERE parent = ? ORDER BY started_at", (run_id,))
        return [self._record(r) for r in rows]

    def delete(self, id_or_prefix: str) -> str:
        """Delete a run and the runs grouped under it; returns the full id. A run still running
        (or with a step running) is refused: its process would lose what it stores next."""
        run_id = resolve_id(self, id_or_prefix)
        rows = self.con.execute(
            "WITH RECURSIVE tree(id) AS (SELECT ? UNION SELECT runs.id FROM runs JOIN tree ON runs.parent = tree.id) "
            "SELECT id, pid, proc_start, hostname, lease_until FROM runs WHERE id IN tree AND status = 'running'",
            (run_id,))
        now, here = time.time(), socket.gethostname()

        def running_now(r) -> bool:   # on this host its process runs; on another, its lease holds
            if r["hostname"] == here:
                return bool(r["pid"]) and alive(r["pid"], r["proc_start"])
            return isinstance(r["lease_until"], float) and r["lease_until"] >= now

        running = next((r for r in rows if running_now(r)), None)
        if running:
            raise RmaxError(f"run {running['id'][:8]} is still running (process {running['pid']} on "
                            f"{running['hostname']}): not deleted",
                            hint="stop it first (Ctrl-C or kill its rmax process), then delete it")
        self.con.execute("DELETE FROM runs WHERE id = ?", (run_id,))
        return run_id


def open_store(path: Path | str | None = None, reading: bool = False) -> Store:
    return Store(path, reading)


def stopped_here(reason: str) -> None:
    """Mark interrupted, with their end time, the runs this process left running in any store it
    started runs in (called last by a process that stops on a signal); a store that cannot be
    opened now is left to the next opener's reaping."""
    for path in _STARTED:
        try:
            with Store(path) as store:
                interrupt_own(store, reason)
        except RmaxError:
            pass
