"""One run's record and its lifecycle: written when it starts, completed when it ends.

A run whose process died without finishing (SIGKILL, power loss) still says
`running`; the next time the store is opened on that host, a row whose process
is gone is marked `interrupted`, and on any host, a row of another host whose
lease (store/lease.py) has lapsed."""

from __future__ import annotations

import json
import os
import shutil
import socket
import stat
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rmax.errors import MissingData, RmaxError, Stopped
from rmax.store.lease import expiry

if TYPE_CHECKING:
    from rmax.store.store import Store

STATUSES = ("running", "ok", "failed", "invalid", "interrupted", "partial")
# partial: finished, but a planned part of it (a survey step, a matrix's retests) did not run or finish;
# what it did measure is kept.
FINAL = ("ok", "failed", "invalid", "interrupted", "partial")
JSON_COLUMNS = ("hosts", "params", "summary", "samples", "argv", "environment", "scratch", "load")
LIST_COLUMNS = ("hosts", "argv", "scratch")
SCRATCH_PREFIX = "rmax-"   # only paths named so are ever removed as a run's scratch


def utcnow() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def process_identity(pid: int | None = None) -> str | None:
    """boot id + start time of a process: unlike a pid, never reused."""
    pid = pid or os.getpid()
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        stat = Path(f"/proc/{pid}/stat").read_text()
        start = stat.rsplit(")", 1)[1].split()[19]
        return f"{boot}:{start}"
    except (OSError, IndexError):
        return None


@dataclass
class RunRecord:
    id: str
    kind: str
    status: str
    started_at: str
    ended_at: str | None = None
    hosts: list = field(default_factory=list)
    params: dict = field(default_factory=dict)
    summary: dict = field(default_factory=dict)
    samples: dict = field(default_factory=dict)
    fingerprint: str | None = None
    argv: list = field(default_factory=list)
    error: str | None = None
    pid: int | None = None
    hostname: str | None = None
    parent: str | None = None
    environment: dict = field(default_factory=dict)
    label: str | None = None
    proc_start: str | None = None
    scratch: list = field(default_factory=list)
    lease_until: float | None = None    # Unix time; renewed while the run's process runs
    load: dict = field(default_factory=dict)   # this host's load readings, "start" and "end" (inventory/load.py)
    headline: str | None = None   # a family run's figures in a line, for `runs list` (Family.list_line)

    @classmethod
    def from_row(cls, row) -> "RunRecord":
        """The record of a row; ValueError when a stored JSON field is malformed."""
        d = dict(row)
        for c in JSON_COLUMNS:
            kind = list if c in LIST_COLUMNS else dict
            d[c] = json.loads(d[c]) if d.get(c) else kind()
            if not isinstance(d[c], kind):
                raise ValueError(f"column {c} holds {type(d[c]).__name__}, not a JSON {kind.__name__}")
        return cls(**d)

    @property
    def duration(self) -> float | None:
        if not self.ended_at:
            return None
        return (datetime.fromisoformat(self.ended_at) - datetime.fromisoformat(self.started_at)).total_seconds()

    @property
    def ran_on(self) -> list:
        """The hosts the run measured: those it names, else the host rmax ran it on (a local run
        stored without hosts: HPL's and its tests', a survey's on this node)."""
        return list(self.hosts) or ([self.hostname] if self.hostname else [])

    def as_dict(self) -> dict:
        d = dict(self.__dict__)
        d["duration_s"] = self.duration
        return d


class Run:
    """A run in progress. Use as a context manager:

        with store.start_run("peakflops", params=...) as run:
            run.record(summary=..., samples=...)
        # ok on normal exit; failed on an exception; interrupted on Ctrl-C or SIGTERM
    """

    def __init__(self, store: "Store", record: RunRecord):
        self.store = store
        self.record = record
        self.id = record.id

    def update(self, **fields: Any) -> None:
        """Store fields now (summary, samples, headline, params, hosts, argv, environment, fingerprint)."""
        for k, v in fields.items():
            setattr(self.record, k, v)
        cols = ", ".join(f"{k} = ?" for k in fields)
        vals = [json.dumps(v) if k in JSON_COLUMNS else v for k, v in fields.items()]
        self.store.con.execute(f"UPDATE runs SET {cols} WHERE id = ?", (*vals, self.id))

    def finish(self, status: str, error: str | None = None) -> None:
        if status not in FINAL:
            raise ValueError(f"not a final status: {status}")
        self.record.status, self.record.error, self.record.ended_at = status, error, utcnow()
        self.record.load = {**self.record.load, **_reading("end")}
        self.store.con.execute("UPDATE runs SET status = ?, error = ?, ended_at = ?, load = ? WHERE id = ?",
                               (status, error, self.record.ended_at, json.dumps(self.record.load), self.id))

    @property
    def finished(self) -> bool:
        return self.record.status != "running"

    def __enter__(self) -> "Run":
        return self

    def __exit__(self, etype, exc, tb) -> bool:
        if self.finished:
            return False
        if etype is None:
            self.finish("ok")
        elif issubclass(etype, (KeyboardInterrupt, SystemExit)):
            self.finish("interrupted", "interrupted by a signal" if etype in (KeyboardInterrupt, Stopped) else str(exc))
        else:
            self.finish("failed", str(exc) or etype.__name__)
        return False


def _reading(when: str) -> dict:
    """{when: this host's load reading now}, or {} where /proc cannot be read."""
    from rmax.inventory import load   # on first use: the inventory package is not needed to read a store

    got = load.read()
    return {when: got.as_dict()} if got else {}


def new_record(kind: str, **fields: Any) -> RunRecord:
    return RunRecord(id=str(uuid.uuid4()), kind=kind, status="running", started_at=utcnow(),
                     pid=os.getpid(), hostname=socket.gethostname(), proc_start=process_identity(),
                     lease_until=expiry(), load=_reading("start"), **fields)


def alive(pid: int, identity: str | None) -> bool:
    """Whether the process that started a run (pid and its identity) still runs."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return identity is None or process_identity(pid) == identity


def remove_scratch(paths: list) -> None:
    """Remove a dead run's scratch paths: only rmax's own (named rmax-*, owned by this user, not
    links), so a store edited by hand cannot make rmax delete anything else."""
    for p in paths:
        path = Path(str(p))
        try:
            st = path.lstat()
        except OSError:
            continue
        if not path.is_absolute() or not path.name.startswith(SCRATCH_PREFIX) or st.st_uid != os.getuid():
            continue
        if stat.S_ISDIR(st.st_mode):
            shutil.rmtree(path, ignore_errors=True)
        elif stat.S_ISREG(st.st_mode):
            path.unlink(missing_ok=True)


def reap_orphans(store: "Store") -> int:
    """Mark `running` rows of this host whose process is gone as interrupted, and remove their scratch;
    and rows of other hosts whose lease has lapsed (their scratch is on that host)."""
    host = socket.gethostname()
    now = time.time()
    lapsed = store.con.execute("SELECT id, hostname, lease_until FROM runs WHERE status = 'running' "
                               "AND hostname IS NOT ? AND lease_until < ?", (host, now)).fetchall()
    for r in lapsed:
        try:
            when = datetime.fromtimestamp(r["lease_until"], timezone.utc).isoformat(timespec="seconds")
        except (OverflowError, ValueError, OSError):   # a row edited by hand
            when = "an unknown time"
        store.con.execute(
            "UPDATE runs SET status = 'interrupted', error = ? WHERE id = ? AND status = 'running' AND lease_until < ?",
            (f"its lease lapsed at {when} unrenewed: its process on {r['hostname']} ended without finishing "
             "the run (killed, or that host lost)", r["id"], now))
    rows = store.con.execute("SELECT id, pid, proc_start, scratch FROM runs WHERE status = 'running' AND hostname = ?",
                             (host,)).fetchall()
    reaped = 0
    for r in rows:
        if r["pid"] and not alive(r["pid"], r["proc_start"]):
            store.con.execute(
                "UPDATE runs SET status = 'interrupted', error = ? WHERE id = ? AND status = 'running'",
                (f"process {r['pid']} ended without finishing the run (killed or crashed)", r["id"]))
            try:
                scratch = json.loads(r["scratch"])
            except ValueError:
                scratch = []
            remove_scratch(scratch if isinstance(scratch, list) else [])
            reaped += 1
    return reaped + len(lapsed)


def interrupt_own(store: "Store", reason: str) -> int:
    """Mark the `running` rows of this very process interrupted: a process that stops on a signal
    calls it last, since the signal may have arrived between a run's end and its final status."""
    cur = store.con.execute(
        "UPDATE runs SET status = 'interrupted', error = ?, ended_at = ? "
        "WHERE status = 'running' AND hostname = ? AND pid = ? AND proc_start IS ?",
        (reason, utcnow(), socket.gethostname(), os.getpid(), process_identity()))
    return cur.rowcount


def resolve_id(store: "Store", prefix: str) -> str:
    """A full run id from a unique prefix (like git's short hashes) or 'latest'.

    'latest' is the latest top-level run: a survey's or tuning session's child runs finish
    before their parent does, and are reached through it."""
    if prefix == "latest":
        row = store.con.execute(
            "SELECT id FROM runs WHERE parent IS NULL ORDER BY started_at DESC LIMIT 1").fetchone()
        if not row:
            raise MissingData("the results store has no runs yet",
                              hint="measure first: `rmax survey --quick`, or a benchmark (`rmax bench --help`)")
        return row["id"]
    if not prefix or any(c not in "0123456789abcdef-" for c in prefix.lower()):
        raise RmaxError(f"'{prefix}' is not a run id", hint="see 'rmax runs list'")
    rows = store.con.execute("SELECT id FROM runs WHERE id LIKE ? LIMIT 3", (prefix.lower() + "%",)).fetchall()
    if not rows:
        raise RmaxError(f"no run with id {prefix}", hint="see 'rmax runs list'")
    if len(rows) > 1:
        raise RmaxError(f"run id prefix {prefix} is ambiguous", hint="give more characters")
    return rows[0]["id"]


