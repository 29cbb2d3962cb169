"""Helpers shared by the tune tests (a uniquely named module: test file names repeat across folders)."""

from pathlib import Path

from rmax.store import open_store
from rmax.store.runs import RunRecord


def stored_runs(db, kind=None, parent=None) -> list[RunRecord]:
    """The runs stored in db, oldest first, read through the store's API (which sees a store whose
    file exists before its tables do as the empty store it is); no file yet: none."""
    if not Path(db).exists():
        return []
    with open_store(db, reading=True) as store:
        return store.list(kind=kind, parent=parent)[::-1]
