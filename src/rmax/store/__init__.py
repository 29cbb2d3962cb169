"""The results store: every run in SQLite, from the moment it starts."""

from rmax.store.db import default_path
from rmax.store.runs import STATUSES, Run, RunRecord
from rmax.store.store import Store, open_store

__all__ = ["Store", "open_store", "default_path", "Run", "RunRecord", "STATUSES"]
