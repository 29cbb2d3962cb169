"""The store's schema as a list of forward migrations, and the mark that makes a file rmax's.

The database's `PRAGMA user_version` is the number of migrations applied. A
new release appends a migration; it never edits an old one, so any older
store can be brought forward step by step.

`PRAGMA application_id` (https://www.sqlite.org/fileformat.html#application_id,
the header's bytes 68-71) is APPLICATION_ID in every store: another program's
SQLite file is told from rmax's by it and refused untouched (db.check_ours).
Stores made before rmax set it have 0 there and exactly the tables of their
user_version's migrations; they get the id with their next write-open."""

APPLICATION_ID = 0x524D4158   # "RMAX" in ASCII, big-endian as SQLite stores it

MIGRATIONS: list[str] = [
    # 1: one row per run, written when the run starts.
    """
    CREATE TABLE runs (
        id           TEXT PRIMARY KEY,
        kind         TEXT NOT NULL,
        status       TEXT NOT NULL,
        started_at   TEXT NOT NULL,
        ended_at     TEXT,
        hosts        TEXT NOT NULL DEFAULT '[]',
        params       TEXT NOT NULL DEFAULT '{}',
        summary      TEXT NOT NULL DEFAULT '{}',
        samples      TEXT NOT NULL DEFAULT '{}',
        fingerprint  TEXT,
        argv         TEXT NOT NULL DEFAULT '[]',
        error        TEXT,
        pid          INTEGER,
        hostname     TEXT
    );
    CREATE INDEX runs_kind_started ON runs(kind, started_at);
    """,
    # 2: runs grouped under a parent (a survey, a tuning session), the environment
    #    they were measured in, a user label, and the owning process's start time
    #    so a recycled pid is never mistaken for the run's process.
    """
    ALTER TABLE runs ADD COLUMN parent TEXT REFERENCES runs(id) ON DELETE CASCADE;
    ALTER TABLE runs ADD COLUMN environment TEXT NOT NULL DEFAULT '{}';
    ALTER TABLE runs ADD COLUMN label TEXT;
    ALTER TABLE runs ADD COLUMN proc_start TEXT;
    CREATE INDEX runs_parent ON runs(parent);
    """,
    # 3: scratch paths a run works in (HPL's input and output folder): removed when the
    #    run ends, and by the reaping of a run whose process died.
    """
    ALTER TABLE runs ADD COLUMN scratch TEXT NOT NULL DEFAULT '[]';
    """,
    # 4: a lease (Unix time) the run's process renews while it runs (store/lease.py): a store
    #    shared between hosts reaps a run whose host or process is gone when its lease lapses.
    """
    ALTER TABLE runs ADD COLUMN lease_until REAL;
    """,
    # 5: the node's load at the run's start and end (inventory/load.py readings, JSON), so that a
    #    figure measured on a busy node can be named.
    """
    ALTER TABLE runs ADD COLUMN load TEXT NOT NULL DEFAULT '{}';
    """,
    # 6: the list view's short text of a family run's figures, made when its summary is stored:
    #    made at listing time it needed every listed kind's family module (`runs list`: 0.2 s of 0.6).
    """
    ALTER TABLE runs ADD COLUMN headline TEXT;
    """,
]

LATEST = len(MIGRATIONS)
