"""The store's SQLite connection: every database error becomes one RmaxError line.

A damaged file can surface on any query, not only on open (a page read for the
first time); wrapping the connection and its cursors catches it wherever it
happens, so no command ever dies with an internal DatabaseError. An error is
called damage only when PRAGMA quick_check then fails too."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from urllib.parse import quote

from rmax.errors import RmaxError

# Result codes (https://www.sqlite.org/rescode.html), primary code = low byte.
BUSY_TIMEOUT = 30.0  # seconds a statement waits for another process's lock
CHECK_TIMEOUT = 5.0  # the same for the quick check an error runs: lock held longer = no evidence of damage
_ERROR, _BUSY, _LOCKED, _READONLY, _IOERR, _CORRUPT, _FULL, _CANTOPEN, _CONSTRAINT, _NOTADB = \
    1, 5, 6, 8, 10, 11, 13, 14, 19, 26


class StoreUnusable(RmaxError):
    """The store cannot be used as it is (damaged, another program's, locked, unwritable, a full disk):
    exit status 1 (README's exit codes), not 2, which is kept for usage errors."""

    exit_code = 1


class StoreBusy(StoreUnusable):
    """Another process holds a lock on the store longer than the busy timeout allows."""


def recover_hint(path: Path) -> str:
    return (f"rmax never overwrites it: move it aside (mv {path} {path}.bad) to start a new store, "
            "or point RMAX_DB at another file")


def damaged(path: Path, detail: str) -> RmaxError:
    detail = " ".join(detail.split())  # one line, whatever SQLite's message holds
    return StoreUnusable(f"results store {path} is damaged ({detail})", hint=recover_hint(path))


def _disk_full(path: Path) -> bool:
    try:
        st = os.statvfs(path.parent)
    except OSError:
        return False
    return st.f_bavail * st.f_frsize < 64 * 1024


def store_error(path: Path, e: sqlite3.DatabaseError) -> RmaxError:
    """The one-line error for an SQLite failure on the store at path."""
    code = (getattr(e, "sqlite_errorcode", None) or 0) & 0xFF
    if code in (_BUSY, _LOCKED):
        return StoreBusy(f"results store {path} is locked by another process ({e})",
                         hint="wait for the other rmax to finish, or set RMAX_DB to another file")
    if code == _FULL or (code == _IOERR and _disk_full(path)):
        # SQLite reports a full disk met while growing its WAL index as an I/O error
        return StoreUnusable(f"no space left to write the results store {path}", hint="free disk space and retry")
    if code in (_READONLY, _IOERR, _CANTOPEN):
        return StoreUnusable(f"cannot read or write the results store {path} ({e})", hint="set RMAX_DB to a writable path")
    if code == _CONSTRAINT:  # a sound file: what this write refers to is gone (a run deleted meanwhile)
        return StoreUnusable(f"cannot store into {path}: the run this result belongs to is no longer there ({e})",
                             hint="was it deleted (rmax runs delete) while it ran? The store itself is sound")
    problem = quick_check_problem(path)
    if problem is not None:
        return damaged(path, f"{e}; PRAGMA quick_check: {problem}")
    # A sound file: advice to move it aside would make the user throw away good results.
    text = " ".join(str(e).split())
    if code == _ERROR and text.startswith(("no such table", "no such column")):
        return StoreUnusable(f"results store {path} does not hold the tables rmax made ({text})",
                             hint="was it changed by another program? rmax leaves it as it is; set RMAX_DB to another file")
    return StoreUnusable(f"the results store {path} refused a statement ({text}); PRAGMA quick_check finds the "
                         "store sound",
                         hint="a value rmax should have refused, or a bug in rmax: please report the command")


def quick_check_problem(path: Path) -> str | None:
    """What PRAGMA quick_check finds wrong with the store at path, on a connection of its own (the
    failing one may be mid-transaction); None when it passes or cannot be run for another reason
    (busy, unreadable), which is no evidence of damage."""
    try:
        con = sqlite3.connect(f"file:{quote(str(path.resolve()))}?mode=ro", uri=True, timeout=CHECK_TIMEOUT)
    except sqlite3.DatabaseError:
        return None
    try:
        return quick_check_findings(con)
    except sqlite3.DatabaseError as e:
        code = (getattr(e, "sqlite_errorcode", None) or 0) & 0xFF
        return " ".join(str(e).split()) if code in (_CORRUPT, _NOTADB) else None
    finally:
        con.close()


def quick_check_findings(con: sqlite3.Connection) -> str | None:
    """PRAGMA quick_check's findings on an open connection, one line; None when it finds nothing."""
    found = [r[0] for r in con.execute("PRAGMA quick_check(3)").fetchall()]
    if found == ["ok"]:
        return None
    return "; ".join(line for text in found for line in text.splitlines() if not line.startswith("***"))


class _Cursor(sqlite3.Cursor):
    def _guard(self, call, *args):
        try:
            return call(*args)
        except sqlite3.ProgrammingError:  # misuse by rmax itself: a bug, not the file's fault
            raise
        except sqlite3.DatabaseError as e:
            raise store_error(self.connection.path, e) from None

    def execute(self, *args):
        return self._guard(super().execute, *args)

    def executemany(self, *args):
        return self._guard(super().executemany, *args)

    def executescript(self, *args):
        return self._guard(super().executescript, *args)

    def fetchone(self):
        return self._guard(super().fetchone)

    def fetchmany(self, *args):
        return self._guard(super().fetchmany, *args)

    def fetchall(self):
        return self._guard(super().fetchall)

    def __next__(self):
        return self._guard(super().__next__)


class StoreConnection(sqlite3.Connection):
    """sqlite3.Connection whose statements and cursors raise RmaxError instead of DatabaseError."""

    path: Path

    def cursor(self, factory=_Cursor):
        return super().cursor(factory)

    def execute(self, *args):
        return self.cursor().execute(*args)

    def executemany(self, *args):
        return self.cursor().executemany(*args)

    def executescript(self, *args):
        return self.cursor().executescript(*args)


def open_connection(path: Path, uri: str | None = None) -> StoreConnection:
    """A connection to path (or to the `uri` given for it: file:...?mode=ro)."""
    try:
        con = sqlite3.connect(uri or str(path), timeout=BUSY_TIMEOUT, isolation_level=None, factory=StoreConnection,
                              uri=uri is not None)
    except sqlite3.DatabaseError as e:
        raise store_error(path, e) from None
    con.path = path
    con.row_factory = sqlite3.Row
    return con
