"""Opening the SQLite store: path, WAL, migrations, and refusing what it cannot trust."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from rmax.errors import RmaxError
from rmax.store import schema


def default_path() -> Path:
    """$RMAX_DB, else $XDG_DATA_HOME/rmax/results.db (XDG's default ~/.local/share)."""
    if os.environ.get("RMAX_DB"):
        return Path(os.environ["RMAX_DB"]).expanduser()
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "rmax" / "results.db"


def _recover_hint(path: Path) -> str:
    return (f"rmax never overwrites it: move it aside (mv {path} {path}.bad) to start a new store, "
            "or point RMAX_DB at another file")


def connect(path: Path) -> sqlite3.Connection:
    """A connection with the store's pragmas, migrated to the latest schema."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise RmaxError(f"cannot create the results store's folder {path.parent}: {e.strerror}",
                        hint="set RMAX_DB to a writable path")
    if path.exists() and not os.access(path, os.R_OK | os.W_OK):
        raise RmaxError(f"results store {path} is not readable and writable by this user",
                        hint="set RMAX_DB to a writable path")
    if not path.exists() and not os.access(path.parent, os.W_OK):
        raise RmaxError(f"cannot create the results store {path}: folder not writable",
                        hint="set RMAX_DB to a writable path")
    try:
        con = sqlite3.connect(str(path), timeout=30, isolation_level=None)
        con.row_factory = sqlite3.Row
        version = con.execute("PRAGMA user_version").fetchone()[0]
        con.execute("PRAGMA journal_mode=WAL")
        con.execute("PRAGMA foreign_keys=ON")
        con.execute("PRAGMA synchronous=NORMAL")
    except sqlite3.DatabaseError as e:
        raise RmaxError(f"results store {path} is damaged or not an SQLite database ({e})",
                        hint=_recover_hint(path))
    if version > schema.LATEST:
        con.close()
        raise RmaxError(f"results store {path} has schema version {version}, newer than this rmax "
                        f"understands ({schema.LATEST})", hint="upgrade rmax, or set RMAX_DB to another file")
    try:
        migrate(con, version)
        con.execute("SELECT count(*) FROM runs").fetchone()
    except sqlite3.DatabaseError as e:
        con.close()
        raise RmaxError(f"results store {path} is damaged ({e})", hint=_recover_hint(path))
    return con


def migrate(con: sqlite3.Connection, current: int, target: int | None = None) -> None:
    """Apply migrations current+1 .. target, each in its own transaction."""
    target = schema.LATEST if target is None else target
    for number in range(current + 1, target + 1):
        con.executescript(
            f"BEGIN IMMEDIATE;\n{schema.MIGRATIONS[number - 1]}\nPRAGMA user_version = {number};\nCOMMIT;")
