import hashlib
import json
import multiprocessing
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from cliutil import assert_one_line_error, run_cli

from rmax.errors import RmaxError
from rmax.store import open_store, schema


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


def _old_store(path, version):
    """A store as an rmax from before the application_id made it: its migrations, application_id 0."""
    con = sqlite3.connect(path, isolation_level=None)
    for script in schema.MIGRATIONS[:version]:
        con.executescript(script)
    con.execute(f"PRAGMA user_version = {version}")
    con.execute("INSERT INTO runs (id, kind, status, started_at) VALUES ('abc-1', 'old', 'ok', '2020-01-01T00:00:00+00:00')")
    con.close()
    return path


@pytest.mark.parametrize("version", [1, schema.LATEST])
def test_migrations_bring_an_old_store_forward_and_mark_it_rmax(tmp_path, version):
    path = _old_store(tmp_path / "old.db", version)
    with open_store(path) as s:
        assert s.con.execute("PRAGMA user_version").fetchone()[0] == schema.LATEST
        assert s.con.execute("PRAGMA application_id").fetchone()[0] == schema.APPLICATION_ID
        rec = s.get("abc-1")
        assert rec.kind == "old" and rec.environment == {} and rec.parent is None


@pytest.mark.parametrize("start", ["new path", "empty file", "empty database"])
def test_a_new_path_or_an_empty_file_becomes_a_store(tmp_path, start):
    path = tmp_path / "x.db"
    if start == "empty file":
        path.touch()
    elif start == "empty database":
        sqlite3.connect(path).execute("VACUUM").connection.close()
        assert path.stat().st_size > 0
    with open_store(path) as s:
        with s.start_run("demo"):
            pass
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA application_id").fetchone()[0] == schema.APPLICATION_ID == 0x524D4158
    assert con.execute("SELECT count(*) FROM runs").fetchone()[0] == 1


def _foreign(path, kind):
    """Another application's SQLite file: a rollback journal and a high user_version, WAL mode with
    changes still in its log, or an application_id of its own."""
    if kind == "wal with a live log":
        code = ("import os, sqlite3; c = sqlite3.connect(%r); c.execute('PRAGMA journal_mode=WAL'); "
                "c.execute('PRAGMA wal_autocheckpoint=0'); c.execute('CREATE TABLE t (x)'); c.commit(); "
                "c.execute('INSERT INTO t VALUES (2)'); c.commit(); os._exit(0)") % str(path)
        subprocess.run([sys.executable, "-c", code], check=True)   # exits without a checkpoint
        return
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE notes (x)")
    con.execute("INSERT INTO notes VALUES (1)")
    con.execute("PRAGMA user_version = 7" if kind == "user_version 7" else "PRAGMA application_id = 1234")
    con.commit()
    con.close()


def _files(folder):
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.iterdir()}


@pytest.mark.parametrize("kind", ["user_version 7", "wal with a live log", "application_id of its own"])
def test_another_programs_sqlite_file_is_refused_untouched(tmp_path, kind):
    path = tmp_path / "other-app.db"
    _foreign(path, kind)
    mode = sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0]
    before = _files(tmp_path)
    for reading in (False, True):
        with pytest.raises(RmaxError, match="is not an rmax store") as e:
            open_store(path, reading=reading)
        assert e.value.exit_code == 1 and "upgrade" not in str(e.value)
    if kind == "user_version 7":    # what a user meets: one line, exit 1, by a reader and a writer alike
        for args in (["runs", "list"], ["bench", "oslat", "--quick", "--tests", "null"]):
            assert_one_line_error(run_cli(*args, env={"RMAX_DB": str(path)}, timeout=120), 1,
                                  "is not an rmax store", "user_version 7", "tables notes")
    assert _files(tmp_path) == before
    assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0] == mode


def test_an_old_store_with_a_table_of_another_program_is_not_taken(tmp_path):
    path = _old_store(tmp_path / "old.db", schema.LATEST)
    sqlite3.connect(path, isolation_level=None).execute("CREATE TABLE extra (x)").connection.close()
    with pytest.raises(RmaxError, match="not an rmax store"):
        open_store(path)


def test_store_from_a_newer_rmax_is_refused(tmp_path):
    path = tmp_path / "new.db"
    con = sqlite3.connect(path)
    con.execute(f"PRAGMA application_id = {schema.APPLICATION_ID}")
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
        assert s.get("latest").id == parent.id   # the latest top-level run, not its child
        assert [c.id for c in s.children(parent.id)] == [child.id]
        assert s.get(parent.id[:8]).id == parent.id
        with pytest.raises(RmaxError, match="no run"):
            s.get("ffffffff")
        with pytest.raises(RmaxError, match="not a run id"):
            s.get("zz!")
        s.delete(parent.id)
        assert s.list() == []


def test_a_running_run_is_not_deleted_under_its_process(db):
    """Deleting a run while its process still writes would lose its results (and fail that
    process on a foreign key): refused, for the run and for its parent alike."""
    with open_store() as s:
        with s.start_run("survey") as parent:
            with s.start_run("hpl", parent=parent.id) as child:
                with pytest.raises(RmaxError, match=f"run {child.id[:8]} is still running"):
                    s.delete(child.id)
                with pytest.raises(RmaxError, match="is still running"):
                    s.delete(parent.id)
            with pytest.raises(RmaxError, match=f"run {parent.id[:8]} is still running"):
                s.delete(parent.id)
        s.delete(parent.id)
        assert s.list() == []


def test_wal_mode(db):
    with open_store() as s:
        assert s.con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert os.path.exists(db)


# --- damaged stores, odd paths, concurrent first opens -------------------------------------------

def _filled_store(path, runs=150):
    """A store of several hundred pages, like a real one after some weeks of use."""
    with open_store(path) as s:
        for i in range(runs):
            with s.start_run("stream", params={"i": i}) as r:
                r.update(summary={"triad": {"median": 1e10}}, samples={"triad": [i * 0.001] * 300})
    return path


def _junk(path, offset):
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(os.urandom(4096))


@pytest.mark.parametrize("damage", ["middle", "tail", "truncated at a page", "truncated mid-page", "header"])
def test_damaged_store_is_refused_by_every_command_and_never_written(tmp_path, damage):
    path = _filled_store(tmp_path / "results.db")
    size = path.stat().st_size
    if damage == "middle":
        _junk(path, size // 2 // 4096 * 4096)
    elif damage == "tail":
        _junk(path, size - 4096)
    elif damage == "truncated at a page":
        os.truncate(path, size // 2 // 4096 * 4096)
    elif damage == "truncated mid-page":
        os.truncate(path, size // 2 + 100)
    else:
        _junk(path, 0)
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    env = {"RMAX_DB": str(path)}
    for args in (["runs", "list"], ["runs", "show", "latest"], ["bench", "oslat"]):
        assert_one_line_error(run_cli(*args, env=env, timeout=120), 1, "is damaged", f"mv {path}")
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.db"]


def test_malformed_stored_json_is_one_line(db):
    with open_store() as s:
        with s.start_run("demo") as run:
            pass
        s.con.execute("UPDATE runs SET summary = '{\"cut'  WHERE id = ?", (run.id,))
        with s.start_run("demo") as other:
            pass
        s.con.execute("UPDATE runs SET hosts = '7' WHERE id = ?", (other.id,))
    assert_one_line_error(run_cli("runs", "list"), 1, "is damaged", "malformed stored field")
    assert_one_line_error(run_cli("runs", "show", run.id), 1, "is damaged", run.id)
    assert_one_line_error(run_cli("runs", "show", other.id), 1, "column hosts")


def test_database_errors_on_any_query_become_rmax_errors(db):
    with open_store() as s:
        s.con.execute("DROP TABLE runs")  # e.g. a store another tool rewrote
        with pytest.raises(RmaxError, match="does not hold the tables rmax made .no such table"):
            s.list()
        with pytest.raises(RmaxError, match="does not hold the tables"):
            list(s.con.execute("SELECT * FROM runs"))


@pytest.mark.parametrize("kind", ["character device", "directory", "named pipe"])
def test_a_path_that_is_not_a_regular_file_is_refused_creating_nothing(tmp_path, kind):
    if kind == "character device":
        path = Path("/dev/null")
    elif kind == "directory":
        path = tmp_path / "store"
        path.mkdir()
    else:
        path = tmp_path / "fifo"
        os.mkfifo(path)
    around = sorted(path.parent.iterdir())
    # a device is refused with all of /dev, /proc and /sys while the command line is read
    words = ("is under /dev",) if kind == "character device" else (f"{path} is a {kind}", "not a regular file")
    proc = run_cli("runs", "list", env={"RMAX_DB": str(path)}, timeout=30)
    assert_one_line_error(proc, 2, *words)
    assert sorted(path.parent.iterdir()) == around  # no -journal, -wal or -shm beside it
    assert_one_line_error(run_cli("--db", str(path), "runs", "list", timeout=30), 2, words[-1])


def _open_and_write(path, writes, start, errors):
    try:
        start.wait()
        with open_store(path) as s:
            for i in range(writes):
                with s.start_run("race", params={"i": i}) as r:
                    r.update(summary={"i": i})
    except BaseException as e:  # reported to the parent, which fails the test
        errors.put(repr(e))


def test_concurrent_first_opens_and_writers_never_fail(tmp_path):
    ctx = multiprocessing.get_context("fork")
    procs, rounds, writes = 8, 6, 5
    for r in range(rounds):
        path = tmp_path / f"new{r}.db"
        start, errors = ctx.Barrier(procs), ctx.Queue()
        workers = [ctx.Process(target=_open_and_write, args=(path, writes, start, errors)) for _ in range(procs)]
        for w in workers:
            w.start()
        for w in workers:
            w.join(120)
        assert errors.empty(), errors.get()
        assert all(w.exitcode == 0 for w in workers)
        con = sqlite3.connect(path)
        assert con.execute("SELECT count(*) FROM runs").fetchone()[0] == procs * writes
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert con.execute("PRAGMA user_version").fetchone()[0] == schema.LATEST
        con.close()


def test_reaping_a_dead_run_removes_its_scratch_and_nothing_else(db, tmp_path):
    mine_dir, mine_file = tmp_path / "rmax-hpl-x", tmp_path / "rmax-rankfile-x.txt"
    other, link = tmp_path / "keep", tmp_path / "rmax-link"
    for d in (mine_dir, other):
        d.mkdir()
        (d / "f").write_text("x")
    mine_file.write_text("x")
    link.symlink_to(other)
    scratch = [str(p) for p in (mine_dir, mine_file, other, link)] + ["rmax-relative", "/etc"]
    child = ("import sys, time\nfrom rmax.store import open_store\n"
             f"run = open_store().start_run('hpl', scratch={scratch!r})\nprint(run.id, flush=True)\ntime.sleep(60)")
    proc = subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.PIPE, text=True)
    run_id = proc.stdout.readline().strip()
    proc.kill()
    proc.wait()
    assert mine_dir.exists() and mine_file.exists()
    with open_store() as s:
        assert s.get(run_id).status == "interrupted"
    assert not mine_dir.exists() and not mine_file.exists()
    assert (other / "f").exists() and link.is_symlink() and Path("/etc").exists()


def test_reading_commands_read_a_store_they_may_not_write_and_create_none(tmp_path, monkeypatch):
    """A shared store on a read-only mount (or another user's) is still listed, shown and compared;
    a mistyped path for a reading command creates no folder and no empty store."""
    from rmax.store import db as store_db

    path = tmp_path / "r.db"
    with open_store(path) as s:
        with s.start_run("stream", params={}) as run:
            run.update(summary={"x": 1})
        rid = run.id
    path.with_name("r.db-shm").unlink(missing_ok=True)       # as a copy onto read-only media has none
    path.with_name("r.db-wal").unlink(missing_ok=True)
    monkeypatch.setattr(store_db, "writable", lambda p: False)
    import rmax.store.store as store_mod
    monkeypatch.setattr(store_mod, "writable", lambda p: False)
    with open_store(path, reading=True) as s:
        assert s.readonly and s.get(rid[:8]).status == "ok"
        with pytest.raises(RmaxError):
            s.start_run("stream", params={})
    typo = tmp_path / "no" / "such" / "x.db"
    for args in (["runs", "list"], ["runs", "show", "latest"], ["compare", "a", "b"]):
        proc = run_cli("--db", str(typo), *args)
        assert (proc.returncode == 0 and "no runs stored yet" in proc.stdout) if args[1] == "list" else \
            "no results store at" in proc.stderr, (args, proc.stdout, proc.stderr)
    assert not (tmp_path / "no").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small tmpfs needs root")
def test_a_full_disk_is_named_and_the_runs_on_it_stay_readable(tmp_path):
    """On a full disk, a command that stores says the disk is full (SQLite calls it an I/O error
    when its WAL index cannot grow), and the runs already stored are still listed."""
    mnt = tmp_path / "full"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)], check=True)
    try:
        env = {"RMAX_DB": str(mnt / "x.db")}
        run_cli("bench", "oslat", "--quick", "--tests", "null", env=env, check=True)
        with open(mnt / "filler", "wb") as f:
            try:
                while True:
                    f.write(b"\0" * 65536)
                    f.flush()
            except OSError:
                pass
        assert_one_line_error(run_cli("bench", "oslat", "--quick", "--tests", "null", env=env), 1, "no space left")
        listed = run_cli("runs", "list", "--json", env=env)
        assert listed.returncode == 0 and [r["kind"] for r in json.loads(listed.stdout)] == ["oslat"], listed.stderr
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_a_stop_between_a_runs_row_and_its_block_still_ends_it(db):
    """The row of a run whose `with` block a stop never reached is marked interrupted, with its end,
    by the process's last act (rmax's exit 130), not left to a later reaping without an end time."""
    from rmax.store.store import stopped_here

    with open_store() as s:
        left = s.start_run("stream", params={})        # no `with`: as if stopped right here
        stopped_here("interrupted by a signal")
        rec = s.get(left.id)
    assert rec.status == "interrupted" and rec.ended_at and rec.error == "interrupted by a signal"
