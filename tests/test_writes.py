"""Files rmax writes for a user: never through a link planted at the target, at a temporary name
or at a folder rmax names itself; never under /dev, /proc or /sys; the results store private.

A hostile local user can plant links in a shared folder (/tmp where fs.protected_symlinks is 0)
before rmax writes there, perhaps as root. Each writer runs with a link to a victim file at its
target: the victim must be unchanged and the target a regular file afterwards."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from cliutil import assert_one_line_error, run_cli
from rmax.errors import RmaxError
from rmax.store import open_store

VICTIM_TEXT = "the victim's own text\n"


@pytest.fixture
def victim(tmp_path) -> Path:
    v = tmp_path / "victim.txt"
    v.write_text(VICTIM_TEXT)
    return v


def _plant(at: Path, to: Path) -> None:
    at.parent.mkdir(parents=True, exist_ok=True)
    at.symlink_to(to)


def _regular(path: Path) -> bool:
    return stat.S_ISREG(os.lstat(path).st_mode)


def _rmax(*args: str) -> RmaxError | None:
    """Run an rmax command in this process (a process per case costs seconds on a loaded machine;
    the one-line, exit-2 form of an RmaxError is tested once below): the RmaxError it ended with."""
    from rmax.cli.app import cli

    try:
        cli.main(args=list(args), prog_name="rmax", standalone_mode=False)
    except RmaxError as e:
        return e
    return None


@pytest.fixture
def two_runs(db) -> list[str]:
    """A tiny store: two finished runs to export, report and compare."""
    ids = []
    with open_store() as s:
        for g in (1.0, 2.0):
            with s.start_run("peakflops", params={"n": 1}) as r:
                r.update(summary={"gflops": g})
            ids.append(r.id)
    return ids


def test_the_temporary_name_is_unguessable_and_never_opened_when_taken(tmp_path, victim, monkeypatch):
    """write_atomic's temporary file: a planted link at the name it tries is skipped (O_EXCL |
    O_NOFOLLOW), and the link at the target itself is replaced, not followed."""
    import rmax.textfile as tf

    names = iter(["planted", "fresh"])
    monkeypatch.setattr(tf, "_token", lambda: next(names))
    target = tmp_path / "out.csv"
    _plant(tmp_path / ".out.csv.planted.tmp", victim)
    _plant(target, victim)
    tf.write_atomic(target, "a,b\n")
    assert victim.read_text() == VICTIM_TEXT
    assert _regular(target) and target.read_text() == "a,b\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [".out.csv.planted.tmp", "out.csv", "victim.txt"]
    monkeypatch.setattr(tf, "_token", lambda: "planted")     # every name taken: refused
    with pytest.raises(RmaxError, match="cannot write"):
        tf.write_atomic(target, "x")
    assert victim.read_text() == VICTIM_TEXT and target.read_text() == "a,b\n"


# (command line, the files it writes relative to tmp_path); {a} and {b} are the two runs' ids
WRITERS = {
    "export csv": (["runs", "export", "--format", "csv", "--out", "x.csv"], ["x.csv"]),
    "export json": (["runs", "export", "--format", "json", "--out", "x.json"], ["x.json"]),
    "report": (["report", "{a}", "--out", "rep"], ["rep/index.html"]),
    "compare --html": (["compare", "{a}", "{b}", "--html", "cmp"],
                       ["cmp/index.html", "cmp/data/comparison.json", "cmp/data/comparison.csv"]),
    "model --plot": (["model", "speedup", "--ts", "1", "--tp", "10", "--max-n", "4", "--plot", "p.svg"], ["p.svg"]),
    "slurm script": (["slurm", "script", "-o", "s.sbatch", "--", "rmax", "survey"], ["s.sbatch"]),
    "topology rankfile": (["topology", "place", "--topology", "c.toml", "--hosts", "a:2,b:2", "--order", "block",
                           "--rankfile", "rf.txt"], ["rf.txt"]),
}


@pytest.mark.parametrize("writer", list(WRITERS))
def test_no_writer_follows_a_link_planted_at_its_target(writer, tmp_path, victim, two_runs, monkeypatch):
    args, outputs = WRITERS[writer]
    monkeypatch.chdir(tmp_path)
    (tmp_path / "c.toml").write_text('[[switch]]\nname = "s1"\nnodes = ["a", "b"]\n')
    for out in outputs:
        _plant(tmp_path / out, victim)
    assert _rmax(*[a.format(a=two_runs[0], b=two_runs[1]) for a in args]) is None
    assert victim.read_text() == VICTIM_TEXT
    for out in outputs:
        assert _regular(tmp_path / out), out
    assert not [p for p in tmp_path.rglob(".*.tmp")]        # no temporary file left behind


def test_cluster_toml_and_vcluster_state_replace_a_planted_link(tmp_path, victim, monkeypatch):
    """Writers reached without a cheap command: topology infer --write and vcluster up write
    through the same functions."""
    from rmax.topology.declared import read_groups, write_cluster_toml
    from rmax.vcluster import state

    toml = tmp_path / "cluster.toml"
    _plant(toml, victim)
    write_cluster_toml(toml, [["a", "b"]], ["s1"])
    assert victim.read_text() == VICTIM_TEXT and _regular(toml) and read_groups(toml) == (["s1"], [["a", "b"]])
    monkeypatch.setenv("RMAX_VCLUSTER_DIR", str(tmp_path / "vc"))
    _plant(tmp_path / "vc" / "h5w" / "state.json", victim)
    state.State("h5w", tmp_path / "vc" / "h5w").save()
    assert victim.read_text() == VICTIM_TEXT and _regular(tmp_path / "vc" / "h5w" / "state.json")


@pytest.mark.parametrize("args, folder", [(["report", "{a}", "--out", "rep"], "rep/data"),
                                          (["compare", "{a}", "{b}", "--html", "cmp"], "cmp/data")])
def test_a_link_at_a_folder_rmax_names_is_refused(args, folder, tmp_path, victim, two_runs, monkeypatch):
    monkeypatch.chdir(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    _plant(tmp_path / folder, elsewhere)
    refused = _rmax(*[a.format(a=two_runs[0], b=two_runs[1]) for a in args])
    assert refused is not None and refused.exit_code == 2 and f"{folder} is a link" in str(refused), refused
    assert list(elsewhere.iterdir()) == []


# Every output path option, each given a path in a kernel tree written another way: missing,
# through `..`, through a link in its folder.
KERNEL_PATHS = [
    (["runs", "export", "--out", "/dev/rmax-no-such-disk"], "/dev"),
    (["runs", "export", "--out", "/tmp/../proc/rmax-x"], "/proc"),
    (["report", "--out", "{link}/rmax-x"], "/sys"),
    (["compare", "a", "b", "--html", "/dev/shm/../rmax-x"], "/dev"),
    (["model", "speedup", "--ts", "1", "--tp", "1", "--plot", "/sys/rmax-x.svg"], "/sys"),
    (["scale", "--plot", "/proc/self/rmax.svg", "hpl"], "/proc"),
    (["slurm", "script", "-o", "/dev/null", "--", "rmax", "survey"], "/dev"),
    (["topology", "infer", "--write", "{link}/cluster.toml"], "/sys"),
    (["topology", "place", "--hosts", "a:1", "--order", "block", "--rankfile", "/proc/1/rf"], "/proc"),
    (["tune", "--out", "/dev/rmax-HPL.dat"], "/dev"),
    (["survey", "--out", "/sys/kernel/rmax"], "/sys"),
    (["--db", "/dev/rmax.db", "runs", "list"], "/dev"),
]


@pytest.mark.parametrize("args, tree", KERNEL_PATHS, ids=[" ".join(a[:2]) + " " + t for a, t in KERNEL_PATHS])
def test_paths_under_dev_proc_sys_are_refused(args, tree, tmp_path, db):
    (tmp_path / "in").symlink_to("/sys")
    refused = _rmax(*[a.format(link=tmp_path / "in") for a in args])
    assert refused is not None and refused.exit_code == 2 and f"is under {tree}" in str(refused), refused
    assert not db.exists()                                  # refused before anything ran or was stored
    assert not [p for p in ("/dev/rmax-no-such-disk", "/dev/rmax-HPL.dat", "/dev/rmax.db") if os.path.lexists(p)]


def test_the_reported_cases_as_a_user_meets_them(tmp_path, victim, two_runs):
    """The issue's two commands, in a process of their own: one error line and exit 2 for the
    device, and the export through a planted link leaves the victim alone."""
    assert_one_line_error(run_cli("runs", "export", "--out", "/dev/rmax-no-such-disk"), 2, "is under /dev")
    assert not os.path.lexists("/dev/rmax-no-such-disk")
    _plant(tmp_path / "x.csv", victim)
    run_cli("runs", "export", "--format", "csv", "--out", str(tmp_path / "x.csv"), check=True)
    assert victim.read_text() == VICTIM_TEXT and _regular(tmp_path / "x.csv")


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_a_new_store_is_private_and_shared_only_when_asked(tmp_path, monkeypatch):
    old = os.umask(0o002)         # a permissive umask does not widen a private store
    try:
        path = tmp_path / "new" / "deeper" / "r.db"
        with open_store(path) as s:
            with s.start_run("demo"):
                pass
            assert {p.name: _mode(p) for p in path.parent.iterdir()} == \
                {"r.db": 0o600, "r.db-wal": 0o600, "r.db-shm": 0o600}
        assert _mode(path.parent) == 0o700 and _mode(path.parent.parent) == 0o700
        os.umask(0o022)           # a strict umask does not narrow a store shared on purpose
        monkeypatch.setenv("RMAX_DB_MODE", "660")
        shared = tmp_path / "team" / "r.db"
        open_store(shared).close()
        assert (_mode(shared), _mode(shared.parent)) == (0o660, 0o770)
    finally:
        os.umask(old)
    existing = tmp_path / "old.db"       # an existing store keeps the mode its owner gave it
    existing.touch(mode=0o644)
    os.chmod(existing, 0o644)
    open_store(existing).close()
    assert _mode(existing) == 0o644
    monkeypatch.setenv("RMAX_DB", str(tmp_path / "b" / "r.db"))
    for bad in ("777x", "1777", "400", "-1"):
        monkeypatch.setenv("RMAX_DB_MODE", bad)
        refused = _rmax("runs", "list")
        assert refused is not None and refused.exit_code == 2 and "RMAX_DB_MODE" in str(refused), refused
    assert not (tmp_path / "b").exists()


def test_only_a_failed_check_calls_the_store_damaged(tmp_path):
    """A statement SQLite refuses on a sound store names the cause; damage is said only when
    PRAGMA quick_check fails, and only then comes the advice to move the store aside."""
    with open_store(tmp_path / "sound.db") as s:
        with s.start_run("demo"):
            pass
        with pytest.raises(RmaxError) as refused:
            s.con.execute("SELECT 1 LIMIT ?", ("x",))      # datatype mismatch, as an out-of-range value gave
    said = str(refused.value)
    assert "damaged" not in said and "move it aside" not in said, said
    assert "datatype mismatch" in said and "quick_check finds the store sound" in said, said
    path = tmp_path / "bad.db"
    with open_store(path) as s:
        for _ in range(3):
            with s.start_run("demo"):
                pass
    assert path.stat().st_size >= 2 * 4096
    with open(path, "r+b") as f:       # the second page (past the header) overwritten: the check fails
        f.seek(4096)
        f.write(b"\xff" * 4096)
    with pytest.raises(RmaxError, match="is damaged .*quick_check.*move it aside"):
        with open_store(path) as s:
            s.list()
