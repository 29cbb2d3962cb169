"""Bad command-line values on every command: each is refused in one error line (and
at most one hint), with a non-zero exit, no traceback, and no run stored.

The cases are generated from the commands themselves: every command and sub-command
of `rmax.cli.app.COMMANDS` is walked, and every option or argument whose type is a
number, size, duration, list, hosts or path (rmax.params, or click's Path) gets the
table of bad values of its type. A new option is covered by adding it."""

from __future__ import annotations

import contextlib
import io
import os
import signal
import time
from pathlib import Path

import click
import pytest

from rmax import params as T
from rmax.cli.app import COMMANDS, cli, main

NUMERIC_CLICK_TYPES = (click.types.IntParamType, click.types.FloatParamType)
# Inputs whose refusal is another part's work, not yet merged here: reported, not failed.
PENDING = {("hpl", "run", "dat"): "HPL.dat reading (rmax.hpl.dat) decodes without a check"}

COMMON = ["", "abc", "nan", "inf", "-inf", "NaN", "Infinity", "1e999", "0x10", "1_000", " ", "\x00", "é", "1\n2",
          "\x1b[2J"]
BIG_INTS = [str(2**63), "99999999999999999999", "-" + str(2**63)]


def _walk(group: click.Group, ctx: click.Context, path: list[str]):
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        if isinstance(cmd, click.Group):
            yield from _walk(cmd, click.Context(cmd, parent=ctx, info_name=name), [*path, name])
        else:
            yield [*path, name], cmd


def commands():
    """(argv prefix, click command) of every runnable command, and the root group itself."""
    root = click.Context(cli, info_name="rmax")
    yield [], cli
    yield from _walk(cli, root, [])


def _fmt(x) -> str:
    return repr(float(x)) if isinstance(x, float) else str(x)


def bad_values(t, files: dict) -> list[str]:
    """The table of values `t` must refuse, from what the type declares."""
    if isinstance(t, T.Number):
        out = COMMON + ["-1"] * (t.lo >= 0) + [_fmt(t.lo)] * t.lo_open + [_fmt(t.lo - 1)]
        out += [_fmt(t.hi * 10 + 1), "1e308", "-1e308"] + [v for v in BIG_INTS if abs(int(v)) > t.hi]
        out += ["1.5", "1e3"] if t.integer else []
        return out
    if isinstance(t, T.NumberList):
        item = bad_values(t.item, files)
        return [v for v in item if v and v.strip()] + [",", "1,,2", "1,nan", ",".join(["1"] * (t.most + 1))]
    if isinstance(t, T.SizeList):
        return bad_values(T.Size(t.lo, t.hi), files) + [",", "8,,16", "8,lots", ",".join(["8"] * (t.most + 1))]
    if isinstance(t, T.Size):
        out = ["", "abc", "nan", "inf", "-1", "1e400", "1.5", "8 KiBB", "99999999999999999999TB", str(t.hi + 1)]
        return out + ([str(t.lo - 1)] if t.lo > 0 else [])
    if isinstance(t, T.Names):
        return ["", ",", " , ", ",".join(["a"] * (t.most + 1))]
    if isinstance(t, T.Duration):
        return ["", "abc", "nan", "inf", "-1m", "0", "0s", "1e9h", "99999999999999h", "10 parsecs"]
    if isinstance(t, T.Hosts):
        return ["", ",", "localhost\nrm:1", "localhost:0", "localhost:-1", "localhost:99999999999999999999", "localhost:nan",
                "localhost:1e3", "bad host!", "-x:1", "a:1:2", "localhost:" + str(2**63), "é:1"]
    if isinstance(t, T.Interface):
        return ["", "nosuch0", "bad name", "eth0;id", "x" * 40, "-1", "..", "/dev/null"]
    if isinstance(t, T.InputFile):
        out = ["", files["dir"], files["binary"], files["nul"], "/dev/null", files["missing"]]
        if t is T.HOSTFILE:
            out += [files["hostfile_huge"], files["hostfile_nan"], files["hostfile_empty"]]
        return out
    if isinstance(t, T.OutputFile):
        return ["", files["dir"], "/dev/null", files["under_file"]] + ([] if t.make_parents else [files["no_parent"]])
    if isinstance(t, T.OutputDir):
        return ["", files["binary"], files["under_file"]]
    if isinstance(t, click.Path):   # an input path given as is (HPL.dat)
        return ["", files["dir"], files["binary"], "/dev/null", files["missing"]]
    return []


def cases(files: dict):
    for path, cmd in commands():
        for p in cmd.params:
            if getattr(p, "is_flag", False) or p.expose_value is False:
                continue
            for v in bad_values(p.type, files):
                key = (*path, p.name)
                if isinstance(p, click.Argument):
                    yield key, [*path, v]
                elif cmd is cli:   # the root group's options come before a command
                    yield key, [max(p.opts, key=len), v, "runs", "list"]
                else:
                    yield key, [*path, max(p.opts, key=len), v]


def test_every_numeric_option_uses_the_checked_types():
    """click's INT and FLOAT (and FloatRange, which lets nan through) must not come back."""
    loose = [(" ".join(path), p.name) for path, cmd in commands() for p in cmd.params
             if isinstance(p.type, NUMERIC_CLICK_TYPES)]
    assert loose == [], f"use rmax.params (Number, Count, Seconds, ...) for {loose}"


@pytest.fixture
def files(tmp_path) -> dict:
    d = tmp_path / "folder"
    d.mkdir()
    binary = tmp_path / "binary"
    binary.write_bytes(bytes(range(256)) * 4)
    nul = tmp_path / "nul.txt"
    nul.write_text("localhost\0 slots=1\n")
    huge = tmp_path / "hosts-huge"
    huge.write_text("localhost slots=99999999999999999999\n")
    nan = tmp_path / "hosts-nan"
    nan.write_text("localhost slots=nan\n")
    empty = tmp_path / "hosts-empty"
    empty.write_text("# nothing\n")
    return {"dir": str(d), "binary": str(binary), "nul": str(nul), "missing": str(tmp_path / "missing"),
            "hostfile_huge": str(huge), "hostfile_nan": str(nan), "hostfile_empty": str(empty),
            "under_file": str(binary / "x"), "no_parent": str(tmp_path / "no" / "such" / "file")}


class _Hung(Exception):
    pass


def _run(argv: list[str], seconds: int = 20) -> tuple[int, str]:
    """rmax ARGV in this process (no interpreter start per case): (exit status, stderr)."""
    err = io.StringIO()

    def alarm(signum, frame):
        raise _Hung(f"rmax {' '.join(argv)} still running after {seconds} s: the value was not refused")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(seconds)
    code = 0
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            main(argv)
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    return code, err.getvalue()


def _clean(code: int, err: str) -> str | None:
    """None when the outcome is the CLI's error contract, else what is wrong with it."""
    lines = [l for l in err.splitlines() if l.strip()]
    if code == 0:
        return "accepted (exit 0)"
    if "Traceback" in err or "internal error" in err:
        return "internal error"
    if not lines or not lines[0].startswith("rmax: error: ") or len(lines) > 2 or \
            (len(lines) == 2 and not lines[1].startswith("  hint: ")):
        return f"not one error line: {lines}"
    return None


def test_bad_values_are_refused_in_one_line_and_store_nothing(files, tmp_path, monkeypatch):
    db = tmp_path / "fuzz.db"
    monkeypatch.setenv("RMAX_DB", str(db))
    monkeypatch.delenv("RMAX_DEBUG", raising=False)
    monkeypatch.chdir(tmp_path)     # default inputs (HPL.dat, cluster.toml) are absent; outputs land here
    t0 = time.monotonic()
    tried, bad, pending, per_command = 0, [], [], {}
    for key, argv in cases(files):
        tried += 1
        code, err = _run(argv)
        why = _clean(code, err)
        command = " ".join(key[:-1]) or "rmax"
        per_command[command] = per_command.get(command, 0) + 1
        if why:
            (pending if key in PENDING else bad).append(f"rmax {' '.join(map(repr, argv))}: {why}: {err.strip()[:200]}")
    seconds = time.monotonic() - t0
    from rmax.store import open_store

    with open_store() as s:
        stored = s.list()
    report = (f"{tried} cases on {len(per_command)} commands, {tried - len(bad) - len(pending)} clean, "
              f"{len(pending)} pending elsewhere ({', '.join(PENDING.values())}), {seconds:.1f} s")
    print(report)
    if os.environ.get("RMAX_FUZZ_REPORT"):
        Path(os.environ["RMAX_FUZZ_REPORT"]).write_text(report + "\n" + "\n".join(bad + pending) + "\n")
    assert tried > 500 and len(per_command) > 30, report   # the walk really found the commands
    assert bad == [], "\n".join(bad[:40]) + f"\n{report}"
    assert stored == [], [r.kind for r in stored]


def test_every_command_module_is_walked():
    walked = {path[0] for path, _ in commands() if path}
    assert walked == set(COMMANDS), set(COMMANDS) - walked



@pytest.mark.parametrize("option", ["--job-name", "--partition", "--account", "--log", "--qos", "--reservation",
                                    "--constraint", "--exclude", "--sbatch"])
@pytest.mark.parametrize("value", ["x\nrm -rf /", "a b", "x'y", 'x"y', "$(id)", ""])
def test_values_written_into_a_batch_script_cannot_add_lines(option, value):
    code, err = _run(["slurm", "script", option, value, "--", "rmax", "survey"])
    assert _clean(code, err) is None and option in err, err
