"""The CLI as a user meets it: help, exit codes, errors, stored runs, and a run killed mid-way."""

import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from cliutil import assert_one_line_error, peakflops_running, run_cli

from rmax.store import open_store


def test_help_lists_every_command_with_a_summary():
    from rmax.cli.app import COMMANDS

    text = " ".join(run_cli("--help", check=True).stdout.split())  # summaries may wrap
    for name, (_, summary) in COMMANDS.items():
        assert f"{name} {summary}" in text
    # every command's own help works too (imports the module for real; in this process, as
    # starting one process a command took 4 s)
    from click.testing import CliRunner

    from rmax.cli.app import cli

    for name in COMMANDS:
        got = CliRunner().invoke(cli, [name, "--help"])
        assert got.exit_code == 0 and "Usage:" in got.output, (name, got.output)


@pytest.mark.parametrize("argv", [["bench", "stream", "--budget", "-1"], ["bench", "net", "--help"],
                                  ["runs", "list"], ["survey", "--help"]])
def test_help_refusals_and_reading_import_no_numerics(argv, tmp_path):
    """numpy and scipy are imported where figures are computed, not to print help, refuse input or
    list runs: every CLI call would pay for them (0.2-0.9 s) before it does anything. The list has
    a run of every family's kind, so that each family's module is imported for its summary."""
    if argv == ["runs", "list"]:
        from rmax.families import MODULE_OF, MODULES
        from rmax.store import open_store

        kinds = set(MODULES) | set(MODULE_OF)      # a module name, or the kind its family has
        with open_store(tmp_path / "r.db") as s:
            for kind in sorted(kinds):
                with s.start_run(kind, hosts=["h"], params={}) as run:
                    run.update(summary={"schema": f"rmax.{kind}/0"})
    code = ("import sys, runpy; sys.argv = ['rmax', *sys.argv[1:]]\n"
            "try:\n    runpy.run_module('rmax', run_name='__main__')\nexcept SystemExit:\n    pass\n"
            "print('NUMERICS', sorted(m for m in ('numpy', 'scipy') if m in sys.modules), file=sys.stderr)\n"
            "print('FAMILIES', 'rmax.families' in sys.modules, file=sys.stderr)")

    def started():
        return subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=60,
                              env={**os.environ, "RMAX_DB": str(tmp_path / "r.db")}).stderr

    err = started()
    assert "NUMERICS []" in err, err
    if argv == ["runs", "list"]:
        # the runs were stored without their list lines (as before the store's migration 6): the
        # first listing made and kept them, so the next one imports no family module at all
        assert "FAMILIES False" in started()


def test_usage_errors_exit_2():
    proc = run_cli("nosuchcommand")
    assert proc.returncode == 2 and "No such command" in proc.stderr
    proc = run_cli("bench", "peakflops", "--budget", "-3")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


def test_bench_peakflops_is_stored_and_shown(db):
    proc = run_cli("bench", "peakflops", "--budget", "0.1", "--isa", "sse2", "--json", check=True)
    rec = json.loads(proc.stdout)
    assert rec["status"] == "ok" and rec["kind"] == "peakflops"
    rows = {(r["isa"], r["precision"], r["threads"]): r for r in rec["summary"]["results"]}
    assert set(rows) == {("sse2", "double", 1), ("sse2", "double", 2), ("sse2", "single", 1),
                         ("sse2", "single", 2)} or len(os.sched_getaffinity(0)) == 1
    assert rec["summary"]["schema"] == "rmax.peakflops/3" and rec["summary"]["statistic"].startswith("maximum")
    one = rows[("sse2", "double", 1)]
    assert one["min"] <= one["median"] <= one["max"]
    assert len(rec["samples"]["sse2/double/1"]) == one["n"]
    assert rec["environment"]["OPENBLAS_NUM_THREADS"] == "1" and rec["argv"][0].endswith("rmax-node")

    listed = json.loads(run_cli("runs", "list", "--json", check=True).stdout)
    assert [r["id"] for r in listed] == [rec["id"]]
    # the list's line was stored with the summary: its headline figure, as `runs show` has it
    from rmax.families import get

    fam = get("peakflops")
    assert "GFLOPS (maximum" in rec["headline"] and rec["headline"] == fam.list_line(fam.Summary.load(rec["summary"]))
    assert listed[0]["headline"] == rec["headline"]
    shown = json.loads(run_cli("runs", "show", rec["id"][:8], "--json", check=True).stdout)
    assert shown["summary"] == rec["summary"]
    table = run_cli("runs", "show", "latest", check=True).stdout
    assert rec["id"] in table and "peakflops" in table

    csv_text = run_cli("runs", "export", "--format", "csv", check=True).stdout
    header, *rows = csv_text.strip().splitlines()
    assert header == "run_id,family,status,started_at,hosts,key,metric,point,statistic,value,unit"
    host = socket.gethostname()
    assert any(f",{host},sse2.double.1," in r and ",maximum of " in r and r.endswith(",GFLOPS") for r in rows), rows
    exported = json.loads(run_cli("runs", "export", "--format", "json", check=True).stdout)
    assert exported[0]["id"] == rec["id"]

    run_cli("runs", "delete", rec["id"], "--yes", check=True)
    assert json.loads(run_cli("runs", "list", "--json", check=True).stdout) == []


def test_run_killed_with_sigkill_is_found_interrupted(db):
    proc = subprocess.Popen([sys.executable, "-m", "rmax", "bench", "peakflops", "--budget", "60"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 30
    run_id = None
    while time.monotonic() < deadline and run_id is None:
        time.sleep(0.2)
        if db.exists():
            with open_store() as s:
                running = s.list(status="running")
            run_id = running[0].id if running else None
    assert run_id, "the run never appeared in the store"
    os.killpg(proc.pid, signal.SIGKILL)  # rmax and its kernel, mid-way
    proc.wait()
    listed = json.loads(run_cli("runs", "list", "--json", check=True).stdout)
    assert [(r["id"], r["status"]) for r in listed] == [(run_id, "interrupted")]


def test_sigterm_marks_the_run_interrupted(db):
    proc = peakflops_running(db)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 143 and "interrupted" in err
    with open_store() as s:
        (rec,) = s.list()
    assert rec.status == "interrupted" and rec.ended_at


def test_bad_run_ids_and_stores(db, tmp_path):
    # a reading command creates no store: without one it says so, with one it looks the id up
    assert_one_line_error(run_cli("runs", "show", "deadbeef"), 1, "no results store at", "rmax survey")
    with open_store():
        pass
    assert_one_line_error(run_cli("runs", "show", "deadbeef"), 2, "no run with id deadbeef")
    bad = tmp_path / "corrupt.db"
    bad.write_bytes(b"garbage" * 1000)
    assert_one_line_error(run_cli("runs", "list", env={"RMAX_DB": str(bad)}), 1, "damaged", "mv ")
    assert bad.read_bytes() == b"garbage" * 1000
    # a store under a regular file cannot be created; one under /dev is refused outright
    assert_one_line_error(run_cli("bench", "oslat", "--quick", env={"RMAX_DB": str(bad / "x.db")}), 2, "cannot create")
    assert_one_line_error(run_cli("bench", "oslat", "--quick", env={"RMAX_DB": "/dev/null/x.db"}), 2, "under /dev")


def test_launch_errors(db):
    assert_one_line_error(run_cli("launch", "check", "--np", "64"), 2, "64 ranks requested", "--oversubscribe")
    assert_one_line_error(run_cli("launch", "check", "--hosts", "no-such-node.invalid:1"), 2, "unknown host")
    assert_one_line_error(run_cli("launch", "check", "--np", "1", env={"PATH": "/nonexistent"}), 2,
                          "mpirun not found", "apt-get install openmpi-bin")
    with open_store() as s:
        assert s.list() == []  # refused input never becomes a run


def test_launch_check_two_ranks(db):
    rec = json.loads(run_cli("launch", "check", "--np", "2", "--json", check=True).stdout)
    assert rec["status"] == "ok" and rec["summary"]["ranks"] == 2 and rec["summary"]["allreduce_ok"]


def test_watchdog_timeout_is_a_failed_run(db):
    proc = run_cli("bench", "peakflops", "--budget", "30", "--timeout", "1")
    assert_one_line_error(proc, 1, "timed out")
    with open_store() as s:
        (rec,) = s.list()
    # what it measured before the watchdog stopped it is kept (partial); with nothing measured, failed
    assert rec.status == ("partial" if rec.samples else "failed") and "timed out" in rec.error


def test_text_that_looks_like_markup_is_shown_as_written(db):
    """A label, host list or error is the user's text: brackets in it are neither styling nor a crash."""
    from rmax.store import open_store

    label = "base[/]line [red]x"
    with open_store() as s:
        with s.start_run("dgemm", hosts=["n[1]"], params={}, label=label) as run:
            run.update(summary={})
    shown = run_cli("runs", "show", "latest", check=True).stdout
    assert f"label: {label}" in shown and "n[1]" in shown
    assert "n[1]" in run_cli("runs", "list", check=True, env={"COLUMNS": "200"}).stdout


def test_a_listing_in_a_pipe_is_one_line_a_run(db):
    """`rmax runs list | grep ok | wc -l` counts the ok runs: in a pipe every row is one line,
    however long its hosts and summary (folded at 80 columns, one row spanned 8 lines)."""
    from rmax.store import open_store

    hosts = [f"node{i:03d}" for i in range(1, 65)]
    with open_store() as s:
        for k in range(5):
            with s.start_run("dgemm", hosts=hosts, params={}, label="x" * 300) as run:
                run.update(summary={"note": "a summary wider than any terminal " * 8})
                if k % 2:
                    run.finish("failed", "on purpose")
    out = run_cli("runs", "list", check=True).stdout
    rows = out.splitlines()[1:]     # the table's body: one plain line a row, below its header
    assert len(rows) == 5 and sum(" ok " in line for line in rows) == 3, out
    assert all("node[001-064]" in line for line in rows), rows[0]     # the hosts as a hostlist


@pytest.mark.parametrize("cmd", [["survey", "--steps", "inventory"], ["hpl", "run", "--np", "1"], ["scale", "--ranks", "1,2", "hpl"]])
def test_a_label_with_a_terminal_escape_is_refused_before_anything_runs(db, cmd):
    # a label is printed back by `runs show`: an escape sequence in a shared store would drive the reader's terminal
    proc = run_cli(*cmd, "--label", "x\x1b]0;pwned\x07")
    assert_one_line_error(proc, 2, "--label", "control character")
    assert "no runs" in run_cli("runs", "list").stdout


def test_every_command_that_takes_a_launcher_takes_vcluster_name():
    """Named virtual clusters: wherever --launcher vcluster can be given, --vcluster NAME can be too."""
    import click

    from rmax.cli.app import cli

    def walk(cmd, path):
        if isinstance(cmd, click.Group):
            ctx = click.Context(cmd)
            for name in cmd.list_commands(ctx):
                yield from walk(cmd.get_command(ctx, name), [*path, name])
        else:
            yield path, {o for p in cmd.params for o in getattr(p, "opts", [])}

    seen = list(walk(cli, []))
    assert len(seen) > 20
    missing = [" ".join(p) for p, opts in seen if "--launcher" in opts and "--vcluster" not in opts]
    assert missing == []


def test_a_stop_python_swallowed_in_a_destructor_is_raised_again():
    """SIGTERM's KeyboardInterrupt raised inside a destructor is only printed by Python, and the command
    ran on to exit 0 (2 of 45 killed reports): the hook raises it again in the command."""
    from types import SimpleNamespace

    from rmax.cli import app

    old = signal.getsignal(signal.SIGALRM)
    try:
        app._redeliver(SimpleNamespace(exc_value=KeyboardInterrupt("SIGTERM")))
        with pytest.raises(KeyboardInterrupt, match="SIGTERM"):
            time.sleep(1)
    finally:
        app._pending.clear()
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


@pytest.mark.parametrize("argv, says, command", [
    (["report"], "no survey stored yet", "rmax survey"),
    (["topology", "infer"], "no all-pairs latency/bandwidth measurement is stored", "rmax bench matrix"),
    (["model", "hpl", "--nodes", "16", "--grid", "4x4"], "no latency and bandwidth measured", "rmax bench net")])
def test_what_was_not_measured_yet_is_exit_1_naming_the_command_that_measures_it(db, argv, says, command):
    with open_store() as s:     # a store, but none of what these read
        with s.start_run("dgemm", hosts=["h"], params={}) as run:
            run.update(summary={})
    assert_one_line_error(run_cli(*argv), 1, says, command)


# Commands whose output is not rmax's to shape: a daemon's log, an export whose format is chosen
# (--format json), a command run on a virtual node, files in Grafana's and Prometheus's formats.
NO_JSON = {("agent", "run"), ("runs", "export"), ("vcluster", "exec"), ("agent", "dashboard"), ("agent", "rules")}


def test_every_command_that_prints_takes_json():
    import click

    from rmax.cli.app import cli

    ctx = click.Context(cli)
    missing = []

    def walk(cmd, path):
        if isinstance(cmd, click.Group):
            for name in cmd.list_commands(ctx):
                walk(cmd.get_command(ctx, name), (*path, name))
        elif path not in NO_JSON and not any(p.name == "as_json" for p in cmd.params):
            missing.append(" ".join(path))

    walk(cli, ())
    assert missing == []


@pytest.mark.parametrize("argv", [["hpl", "engines"], ["runs", "list"]])
def test_a_reader_that_leaves_ends_the_command_quietly_with_0(db, argv):
    """`rmax ... | head -1`: the pipe closes under the writer; rich and click would exit 1."""
    from rmax.store import open_store

    with open_store() as s:
        for _ in range(200):
            with s.start_run("dgemm", hosts=["h"], params={}) as run:
                run.update(summary={})
    r, w = os.pipe()
    os.close(r)    # the reader is gone before the first write
    proc = subprocess.run([sys.executable, "-m", "rmax", *argv], stdout=w, stderr=subprocess.PIPE, text=True,
                          timeout=60)
    os.close(w)
    assert proc.returncode == 0 and proc.stderr == "", (proc.returncode, proc.stderr)
