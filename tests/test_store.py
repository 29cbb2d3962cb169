import hashlib
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time

import pytest

from rmax.errors import RmaxError
from rmax.store import open_store, schema
from rmax.store.db import migrate


def test_run_row_exists_from_start_and_completes(db):
    with open_store() as s:
        run = s.start_run("demo", params={"n": 3}, hosts=["a"])
        row = s.get(run.id)
        assert row.status == "running" and row.ended_at is None and row.params == {"n": 3}
        with run:
            run.update(summary={"x": {"median": 1.5}}, samples={"x": [1, 2]})
        row = s.get(run.id)
    assert row.status == "ok" and row.ended_at >= row.started_at
    assert row.samples == {"x": [1, 2]} and row.summary["x"]["median"] == 1.5


@pytest.mark.parametrize("exc, status", [(ValueError("boom"), "failed"), (KeyboardInterrupt(), "interrupted")])
def test_exceptions_set_status(db, exc, status):
    with open_store() as s:
        with pytest.raises(type(exc)):
            with s.start_run("demo") as run:
                raise exc
        rec = s.get(run.id)
    assert rec.status == status and rec.error


def test_explicit_invalid_status_is_kept(db):
    with open_store() as s:
        with s.start_run("demo") as run:
            run.finish("invalid", "residual FAILED")
        assert s.get(run.id).status == "invalid"


def test_sigkilled_process_leaves_interrupted_row(db):
    child = textwrap.dedent("""
        import sys, time
        from rmax.store import open_store
        s = open_store()
        run = s.start_run("sleeper")
        print(run.id, flush=True)
        time.sleep(60)
    """)
    proc = subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.PIPE, text=True)
    run_id = proc.stdout.readline().strip()
    with open_store() as s:
        assert s.get(run_id).status == "running"  # its process is alive: not reaped
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    with open_store() as s:
        rec = s.get(run_id)
    assert rec.status == "interrupted"
    assert str(proc.pid) in rec.error


def test_migrations_bring_an_old_store_forward(tmp_path):
    path = tmp_path / "old.db"
    con = sqlite3.connect(path, isolation_level=None)
    migrate(con, target=1)
    con.execute("INSERT INTO runs (id, kind, status, started_at) VALUES ('abc-1', 'old', 'ok', '2020-01-01T00:00:00+00:00')")
    con.close()
    with open_store(path) as s:
        assert s.con.execute("PRAGMA user_version").fetchone()[0] == schema.LATEST
        rec = s.get("abc-1")
        assert rec.kind == "old" and rec.environment == {} and rec.parent is None


def test_store_from_a_newer_rmax_is_refused(tmp_path):
    path = tmp_path / "new.db"
    con = sqlite3.connect(path)
    con.execute(f"PRAGMA user_version = {schema.LATEST + 1}")
    con.close()
    with pytest.raises(RmaxError, match="newer"):
        open_store(path)


def test_corrupt_store_is_refused_and_left_untouched(tmp_path):
    path = tmp_path / "bad.db"
    path.write_bytes(b"this is not sqlite " * 200)
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    with pytest.raises(RmaxError) as e:
        open_store(path)
    assert "mv " in e.value.hint
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before


def test_unwritable_location_is_a_clear_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(RmaxError, match="cannot create"):
        open_store(blocker / "sub" / "results.db")


def test_id_prefixes_latest_and_delete_cascade(db):
    with open_store() as s:
        with s.start_run("survey") as parent:
            time.sleep(0.01)  # started_at has millisecond resolution
            with s.start_run("child", parent=parent.id) as child:
                pass
        assert s.get("latest").id == child.id
        assert [c.id for c in s.children(parent.id)] == [child.id]
        assert s.get(parent.id[:8]).id == parent.id
        with pytest.raises(RmaxError, match="no run"):
            s.get("ffffffff")
        with pytest.raises(RmaxError, match="not a run id"):
            s.get("zz!")
        s.delete(parent.id)
        assert s.list() == []


def test_wal_mode(db):
    with open_store() as s:
        assert s.con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert os.path.exists(db)
