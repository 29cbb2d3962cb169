"""Opening the SQLite store: path, WAL, migrations, and refusing what it cannot trust.

A store is checked before anything is written to it: the path must be a
regular file, its header must be SQLite's with a size that matches, it must be
rmax's (its application_id, or an old store's exact tables: `check_ours`) and
`PRAGMA quick_check` must pass. A store that fails is refused with one line and
left exactly as it was."""

from __future__ import annotations

import functools
import os
import sqlite3
import stat
import time
from pathlib import Path
from urllib.parse import quote

from rmax.errors import MissingData, RmaxError
from rmax.store import schema
from rmax.textfile import file_kind, make_folders
from rmax.store.connection import (BUSY_TIMEOUT, StoreBusy, StoreConnection, StoreUnusable, damaged, open_connection,
                                   quick_check_findings)

# The file format (https://www.sqlite.org/fileformat.html): a 100-byte header.
_MAGIC = b"SQLite format 3\x00"


def default_path() -> Path:
    """$RMAX_DB, else $XDG_DATA_HOME/rmax/results.db (XDG's default ~/.local/share)."""
    if os.environ.get("RMAX_DB"):
        return Path(os.environ["RMAX_DB"]).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "rmax" / "results.db"


def _check_location(path: Path) -> os.stat_result | None:
    """The file's stat when it exists; refuses what is not a usable regular file or folder."""
    try:
        st = path.stat()
    except (FileNotFoundError, NotADirectoryError):
        st = None
    except OSError as e:
        raise StoreUnusable(f"cannot use the results store {path}: {e.strerror}", hint="set RMAX_DB to a writable path")
    if st is not None:
        kind = file_kind(st.st_mode)
        if not stat.S_ISREG(st.st_mode):
            # a path that names no file to store into is a usage error (2), not an unusable store
            raise RmaxError(f"results store {path} is {kind}, not a regular file",
                            hint="set RMAX_DB (or --db) to a file path such as ~/rmax-results.db")
        if not os.access(path, os.R_OK | os.W_OK):
            raise StoreUnusable(f"results store {path} is not readable and writable by this user",
                            hint="set RMAX_DB to a writable path")
        return st
    mode = store_mode()
    try:
        make_folders(path.parent, "the results store's folder", folder_mode(mode))
    except RmaxError as e:
        raise RmaxError(e.message, hint="set RMAX_DB to a writable path") from None
    if not os.access(path.parent, os.W_OK):
        raise StoreUnusable(f"cannot create the results store {path}: folder not writable",
                            hint="set RMAX_DB to a writable path")
    _create_private(path, mode)
    return None


MODE_VARIABLE = "RMAX_DB_MODE"
DEFAULT_MODE = 0o600   # a store holds command lines and host names: the owner's alone unless asked


def store_mode() -> int:
    """The permissions a new store is created with: $RMAX_DB_MODE (octal, e.g. 660 for a store shared
    by a group) or 0600."""
    text = os.environ.get(MODE_VARIABLE, "").strip()
    if not text:
        return DEFAULT_MODE
    try:
        mode = int(text, 8)
    except ValueError:
        mode = -1
    if not 0 <= mode <= 0o777 or mode & 0o600 != 0o600:
        raise RmaxError(f"{MODE_VARIABLE}={text!r} is not a file mode rmax can use for the results store",
                        hint="octal permissions that let the owner read and write, e.g. 600 or 660")
    return mode


def folder_mode(mode: int) -> int:
    """The folder's permissions for a store of `mode`: whoever may read the store may enter the folder,
    and whoever may write it may write there too (SQLite makes its -wal and -shm files beside it)."""
    return mode | (mode & 0o444) >> 2


def _create_private(path: Path, mode: int) -> None:
    """Create the store's empty file with `mode` exactly (not filtered by the umask), through no link
    planted at its name. SQLite gives the -wal and -shm files it makes beside it the same mode."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    except FileExistsError:
        if path.is_symlink():   # a link to nothing (stat found no file): SQLite would create its target
            raise RmaxError(f"results store {path} is a link to nothing", hint="remove the link or set RMAX_DB") from None
        return     # another process created it a moment ago: it is checked like any existing store
    except OSError as e:
        raise StoreUnusable(f"cannot create the results store {path}: {e.strerror}",
                            hint="set RMAX_DB to a writable path") from None
    try:
        os.fchmod(fd, mode)
    finally:
        os.close(fd)


class NoStore(MissingData):
    """A command that only reads found no store at the path: it creates none. Nothing measured
    there yet is missing data (exit 1), its hint the command that measures."""


def writable(path: Path) -> bool:
    """Whether this process may write the store at path (the file, and its folder for the WAL's files)."""
    try:
        return os.access(path, os.W_OK) and os.access(path.parent, os.W_OK) and \
            not os.statvfs(path.parent).f_flag & os.ST_RDONLY
    except OSError:
        return False


def connect_readonly(path: Path) -> StoreConnection:
    """A read-only connection to an existing store this process may not write (a read-only mount,
    another user's file): checked like a writable one, but nothing is created, migrated or reaped.
    SQLite needs the WAL's index file to read a WAL store; where it cannot exist (a read-only
    folder) the file is read as immutable, which is sound since nobody can write it there."""
    try:
        st = path.stat()
    except FileNotFoundError:
        raise NoStore(f"no results store at {path}: nothing has been stored there",
                      hint="measure first (`rmax survey --quick`), or set RMAX_DB (or --db) to the store "
                           "you measured into") from None
    except OSError as e:
        raise StoreUnusable(f"cannot use the results store {path}: {e.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        raise RmaxError(f"results store {path} is {file_kind(st.st_mode)}, not a regular file")
    if not os.access(path, os.R_OK):
        raise StoreUnusable(f"results store {path} is not readable by this user")
    if st.st_size > 0:
        _check_header(path, st.st_size)
    uri = f"file:{quote(str(path.resolve()))}?mode=ro"
    con = None
    if path.with_name(path.name + "-shm").exists():
        try:
            con = open_connection(path, uri)
            con.execute("PRAGMA user_version").fetchone()
        except RmaxError:   # an index file it cannot use (left empty by a full disk)
            if con is not None:
                con.close()
            con = None
    if con is None:
        wal = path.with_name(path.name + "-wal")
        if wal.exists() and wal.stat().st_size > 0:
            # immutable reads the main file only: runs still in the log would be missing, unsaid
            raise StoreUnusable(f"results store {path} has runs in its write-ahead log ({wal.name}) that a read-only "
                            "open cannot see", hint="open it once where it is writable, which folds the log in")
        con = open_connection(path, uri + "&immutable=1")
    try:
        version = check_ours(con)
        if version != schema.LATEST:
            raise StoreUnusable(f"results store {path} has schema version {version}, and this rmax reads "
                            f"{schema.LATEST}; it cannot change a store it may not write",
                            hint="open it once where it is writable (any rmax command that stores a run)")
        if st.st_size > 0:
            _quick_check(con)
    except BaseException:
        con.close()
        raise
    return con


def _check_header(path: Path, size: int) -> None:
    """Refuse a file that is not an SQLite database or not whole pages long. (A truncation at a page
    boundary reads as damage to SQLite itself, which the quick check reports.)"""
    with open(path, "rb") as f:
        head = f.read(100)
    if len(head) < 100:
        raise damaged(path, f"only {size} bytes, shorter than an SQLite header")
    if head[:16] != _MAGIC:
        raise damaged(path, "not an SQLite database: its header is wrong")
    page = int.from_bytes(head[16:18], "big")
    page = 65536 if page == 1 else page
    if page < 512 or page & (page - 1):
        raise damaged(path, f"its header gives an impossible page size {page}")
    if size % page:
        raise damaged(path, f"its size {size} is not a whole number of {page}-byte pages (truncated or appended to)")


def _shape(con: sqlite3.Connection) -> frozenset:
    """What a database holds, by name: its tables, indexes, views and triggers, and each table's columns."""
    objects = [(r[0], r[1]) for r in con.execute(
        "SELECT type, name FROM sqlite_master WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\'")]
    columns = [("column", f"{name}.{c[0]}") for kind, name in objects if kind == "table"
               for c in con.execute("SELECT name FROM pragma_table_info(?)", (name,))]
    return frozenset(objects + columns)


@functools.lru_cache(maxsize=None)
def _shape_at(version: int) -> frozenset:
    """What the first `version` migrations make: an rmax store of that version from before the
    application_id holds exactly this."""
    con = sqlite3.connect(":memory:")
    try:
        for number in range(1, version + 1):
            for statement in _statements(schema.MIGRATIONS[number - 1]):
                con.execute(statement)
        return _shape(con)
    finally:
        con.close()


def check_ours(con: StoreConnection) -> int:
    """The store's schema version, once it is known to be rmax's: its application_id is rmax's, or
    it is 0 and the file holds nothing (an empty database becomes a store) or exactly the tables of
    its user_version's migrations (a store from before the id). Any other file is another
    program's: refused, one line, nothing written."""
    con.execute("BEGIN")   # one read transaction: a store being made meanwhile is seen before or after, whole
    try:
        app = con.execute("PRAGMA application_id").fetchone()[0]
        version = con.execute("PRAGMA user_version").fetchone()[0]
        shape = _shape(con) if app != schema.APPLICATION_ID else None
    finally:
        if con.in_transaction:   # an error (a full disk) may have ended it: that error is the one to tell
            con.execute("COMMIT")
    if shape is None:
        return version
    if app == 0 and 0 <= version <= schema.LATEST and shape == _shape_at(version):
        return version
    tables = sorted(name for kind, name in shape if kind == "table")
    held = f"tables {', '.join(tables[:5])}{', ...' if len(tables) > 5 else ''}" if tables else "no tables"
    raise StoreUnusable(f"{con.path} is not an rmax store (SQLite application_id {app:#x}, rmax's is "
                        f"{schema.APPLICATION_ID:#x}; user_version {version}; {held}): rmax leaves it untouched",
                        hint="set RMAX_DB (or --db) to an rmax store, or to a new path for a new one")


def _check_ours_untouched(path: Path) -> None:
    """check_ours before a writable connection exists, so that nothing (a journal mode, the
    checkpoint a last writer makes at close, a -wal file) touches a file that is not rmax's. The
    header's id is rmax's in every store but a new one whose first commit is still in its log; any
    other file is read on a read-only connection, immutable unless its log holds changes, so that
    no -wal or -shm file is made beside it either."""
    with open(path, "rb") as f:
        head = f.read(100)
    if int.from_bytes(head[68:72], "big", signed=True) == schema.APPLICATION_ID:
        return
    wal = path.with_name(path.name + "-wal")
    live = wal.exists() and wal.stat().st_size > 0
    con = open_connection(path, f"file:{quote(str(path.resolve()))}?mode=ro" + ("" if live else "&immutable=1"))
    try:
        check_ours(con)
    finally:
        con.close()


def _quick_check(con: StoreConnection) -> None:
    problem = quick_check_findings(con)
    if problem is not None:
        raise damaged(con.path, "PRAGMA quick_check: " + problem)


def _use_wal(con: StoreConnection) -> None:
    """Switch a new store to WAL. The switch needs the file to itself and, while other processes
    are opening the same new store, SQLite answers busy without calling the busy handler; so retry."""
    deadline = time.monotonic() + BUSY_TIMEOUT
    while True:
        try:
            con.execute("PRAGMA journal_mode=WAL")
            return
        except StoreBusy:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def connect(path: Path) -> StoreConnection:
    """A connection with the store's pragmas, checked and migrated to the latest schema."""
    st = _check_location(path)
    if st is not None and st.st_size > 0:
        _check_header(path, st.st_size)
        _check_ours_untouched(path)
    con = open_connection(path)
    try:
        version = check_ours(con)   # again on this connection: a file replaced meanwhile is checked too
        if version > schema.LATEST:
            raise StoreUnusable(f"results store {path} has schema version {version}, newer than this rmax "
                            f"understands ({schema.LATEST})", hint="upgrade rmax, or set RMAX_DB to another file")
        if st is not None and st.st_size > 0:
            _quick_check(con)
        _use_wal(con)
        con.execute("PRAGMA foreign_keys=ON")
        con.execute("PRAGMA synchronous=NORMAL")
        migrate(con)
    except BaseException:
        con.close()
        raise
    return con


def _statements(script: str) -> list[str]:
    """The statements of an SQL script (executescript would commit the open transaction)."""
    out, pending = [], ""
    for piece in script.split(";"):
        pending += piece + ";"
        if sqlite3.complete_statement(pending):
            if pending.strip(" \n\t;"):
                out.append(pending.strip())
            pending = ""
    return out


def migrate(con: sqlite3.Connection, target: int | None = None) -> None:
    """Bring the schema to target (default the latest) and the application_id to rmax's in one
    write transaction.

    The version is read again after the write lock is taken, so processes that
    open a new store at the same moment apply each migration exactly once."""
    target = schema.LATEST if target is None else target
    if con.execute("PRAGMA user_version").fetchone()[0] >= target and \
            con.execute("PRAGMA application_id").fetchone()[0] == schema.APPLICATION_ID:
        return
    con.execute("BEGIN IMMEDIATE")
    try:
        current = con.execute("PRAGMA user_version").fetchone()[0]
        for number in range(current + 1, target + 1):
            for statement in _statements(schema.MIGRATIONS[number - 1]):
                con.execute(statement)
        if target > current:
            con.execute(f"PRAGMA user_version = {int(target)}")
        # a new store, or one from before the id, is marked rmax's in the same commit
        con.execute(f"PRAGMA application_id = {schema.APPLICATION_ID}")
        con.execute("COMMIT")
    except BaseException:
        if con.in_transaction:
            con.execute("ROLLBACK")
        raise
