"""Helpers shared by the tune tests (a uniquely named module: test file names repeat across folders)."""

import sqlite3


def stored_runs(db, kind=None, parent=None):
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    sql, args = "SELECT * FROM runs WHERE 1=1", []
    if kind:
        sql, args = sql + " AND kind = ?", args + [kind]
    if parent:
        sql, args = sql + " AND parent = ?", args + [parent]
    rows = [dict(r) for r in con.execute(sql + " ORDER BY started_at", args)]
    con.close()
    return rows
