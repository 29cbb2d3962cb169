"""The docs' example commands: every one parses, the cheap ones run as shown, the rest say what they need.

What is an example: in README.md and docs/*.md, a line of a fenced code block with no language or a
shell one (sh, shell, bash, console; `text`, `toml`... blocks are not commands) that starts with
`rmax ` (or `NAME=VALUE rmax `), or with `$ rmax ` where the block marks its commands with `$ `
(there the other lines are output); a trailing backslash joins the next line. Also each `rmax ...`
code span in the example column of README's command table.

Shell syntax, decided here: a line is split as the shell would (shlex; a `# ...` tail is a comment).
`NAME=VALUE` before `rmax` is set in the command's environment. A pipe (`| grep ok`) or an output
redirection (`> file`) ends the rmax command: it runs with its output captured, as a pipe would take
it, and the rest of the line (not rmax) is not run, so `> /etc/...` writes nothing. An rmax command
further in (after `--`, `exec`, `salloc ...`, or in `$(...)`) is parsed, not run. `...` stands for
more of the same: it is left out of the parse, and such an example is not run.

Checked: (a) every rmax command parses: its click command resolved and its options parsed and
converted (make_context, not resilient), nothing invoked, so an option that no longer exists or a
value out of range fails. (b) Every example not marked as needing something runs, in doc order, in
one store fresh for this module and one scratch folder (what an earlier example stored or wrote is
there for later ones; a non-shell block whose first line is `# NAME` is the file NAME there): it
exits 0, or 1 with a message naming an `rmax ...` command that measures what is missing (which must
parse too). (c) An example that needs what this test cannot give quickly (root, a virtual cluster,
Slurm, other hosts, minutes of measurement, a run id from your own store) says so in the doc: a
line `# needs: ...` above it in its block (covering the lines below it up to a blank line or the
next `# needs:`), or `(needs: ...)` after it in README's table. Commands that measure for long,
change the system or run until stopped (NEVER_RUN) are never run, so they must be marked.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

import click
import pytest
from cliutil import ROOT, run_in_process

from rmax.errors import RmaxError

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELL_BLOCKS = {"", "sh", "shell", "bash", "console"}
FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*([^`\s]*)[^`]*$")
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
OPERATORS = {"|", "||", "&&", ";", "&", "|&"}
REDIRECTIONS = {">", ">>", "<", "&>", ">&"}
WRAPPERS = {"exec", "sudo", "env", "nohup", "time", "timeout", "salloc", "srun", "sbatch"}   # run the command after them
COMMAND_LINE = re.compile(r"^\s*([A-Za-z_]\w*=\S*\s+)*((" + "|".join(sorted(WRAPPERS)) + r")\s.*)?rmax\s"
                          r"|\$\(rmax\s|\s--\s+rmax\s")
SUBSTITUTION = re.compile(r"\$\((rmax [^)]*)\)")
INDENTED_EXAMPLE = re.compile(r"^( {4,}|\t)(\$ )?rmax ")
NEEDS = re.compile(r"^\s*#\s*needs:\s*\S")
TABLE_EXAMPLE = re.compile(r"`(rmax [^`]+)`\s*(\(needs: [^)]+\))?\s*\|?\s*$")
NAMED_COMMAND = re.compile(r"[`'](rmax [^`']+)[`']")


@dataclass
class Example:
    where: str                      # file:line
    text: str                       # as the doc shows it
    commands: list[list[str]]       # every rmax command in it, as argv after `rmax`
    run: list[str] | None           # the argv to run: the line's own rmax command, when it starts with one
    env: dict[str, str] = field(default_factory=dict)
    needs: str | None = None        # what the doc says it needs first
    placeholder: bool = False       # has `...`: not runnable as shown


def fenced_blocks(path: Path) -> list[tuple[str, list[tuple[int, str]]]]:
    """Each fenced block's language and numbered lines. A fence never closed is a problem (the rest of
    the file would show as code, its examples hidden), and so is an indented block's example (it
    would not be found here)."""
    blocks, current, fence = [], None, ""
    for no, line in enumerate(path.read_text().splitlines(), 1):
        m = FENCE.match(line)
        if current is None:
            if m:
                fence, current = m.group(1), (m.group(2).lower(), [])
            elif INDENTED_EXAMPLE.match(line):
                PROBLEMS.append(f"{path.name}:{no}: an example in an indented block: fence it with ```")
        elif m and not m.group(2) and line.strip() == line.strip()[0] * len(line.strip()) \
                and line.strip()[0] == fence[0] and len(line.strip()) >= len(fence):
            blocks.append(current)
            current = None
        else:
            current[1].append((no, line))
    if current is not None:
        PROBLEMS.append(f"{path.name}: a code block is never closed (its first line: {current[1][:1]})")
    return blocks


PROBLEMS: list[str] = []     # what keeps a doc's examples from being read at all
BLOCKS = {doc: fenced_blocks(doc) for doc in DOCS}


def words(line: str) -> list[str]:
    lex = shlex.shlex(line, posix=True, punctuation_chars=True)
    lex.whitespace_split = True
    lex.commenters = "#"
    return list(lex)


def rmax_commands(tokens: list[str]) -> list[list[str]]:
    """Every rmax command in a line's words: at the start of a pipeline element (after NAME=VALUE
    words or a wrapper such as exec or salloc -N 4), after `--` (a command rmax runs), in `$(...)`."""
    found: list[list[str]] = []
    for t in tokens:
        for inner in SUBSTITUTION.findall(t):
            found += rmax_commands(words(inner))
    segment: list[str] = []
    for t in [*tokens, ";"]:
        if t not in OPERATORS:
            segment.append(t)
            continue
        args = _without_redirections(segment)
        head = [a for a in args if not ASSIGNMENT.match(a)][:1]
        if "rmax" in args and (head == ["rmax"] or head[0] in WRAPPERS):
            args = args[args.index("rmax") + 1:]
            found.append(args)
            for i, a in enumerate(args[:-1]):
                if a == "--" and args[i + 1] == "rmax":
                    found.append(args[i + 2:])
        segment = []
    return found


def _without_redirections(segment: list[str]) -> list[str]:
    out, skip = [], False
    for t in segment:
        if skip:
            skip = False
        elif t in REDIRECTIONS:
            skip = True
            if out and out[-1].isdigit():   # `2> file`: shlex splits the descriptor off
                out.pop()
        else:
            out.append(t)
    return out


def examples(path: Path) -> list[Example]:
    found = []
    rel = path.relative_to(ROOT)
    for lang, lines in BLOCKS[path]:
        if lang not in SHELL_BLOCKS:
            continue
        prompted = any(l.startswith("$ ") for _, l in lines)
        needs, joined, start = None, "", 0
        for no, line in lines:
            if not line.strip():
                needs = None
                continue
            if NEEDS.match(line):
                needs = line.split("needs:", 1)[1].strip()
                continue
            if prompted:
                if not line.startswith("$ ") and not joined:
                    continue                        # output shown under a command
                line = line[2:] if line.startswith("$ ") else line
            if not joined:
                start = no
            joined += line.rstrip()
            if joined.endswith("\\"):
                joined = joined[:-1] + " "
                continue
            text, joined = joined, ""
            if not COMMAND_LINE.search(text):
                continue                            # prose or a drawing in a plain block: no rmax command
            try:
                tokens = words(text)
            except ValueError as e:     # an unbalanced quote: a shell could not run it either
                PROBLEMS.append(f"{rel}:{start}: {e}: {text}")
                continue
            head = [t for t in tokens if not ASSIGNMENT.match(t)][:1]
            commands = rmax_commands(tokens)
            if not commands:
                continue
            own = head == ["rmax"]
            first = _without_redirections(_first_segment(tokens))
            env = dict(t.split("=", 1) for t in first[:first.index("rmax")]) if own else {}
            found.append(Example(f"{rel}:{start}", text, [[a for a in c if a != "..."] for c in commands],
                                 run=commands[0] if own else None, env=env, needs=needs,
                                 placeholder=any("..." in c for c in commands)))
    if path.name == "README.md":
        for no, line in enumerate(path.read_text().splitlines(), 1):
            m = TABLE_EXAMPLE.search(line) if line.startswith("| `rmax") else None
            if m:
                commands = rmax_commands(words(m.group(1)))
                found.append(Example(f"{rel}:{no}", m.group(1), commands, run=commands[0],
                                     needs=m.group(2)[len("(needs: "):-1] if m.group(2) else None))
    return found


def _first_segment(tokens: list[str]) -> list[str]:
    for i, t in enumerate(tokens):
        if t in OPERATORS:
            return tokens[:i]
    return tokens


ALL = [e for doc in DOCS for e in examples(doc)]


def parse(args: list[str]) -> str:
    """Resolve `rmax ARGS` to its click command and parse its options and arguments as a run would,
    invoking nothing: unknown options, bad values and missing required ones raise click's UsageError.
    Returns the command's path (`rmax bench stream`)."""
    from rmax.cli.app import cli

    ctx = cli.make_context("rmax", list(args), resilient_parsing=False)
    command = cli
    while isinstance(command, click.Group):
        rest = [*(ctx._protected_args if hasattr(ctx, "_protected_args") else ctx.protected_args), *ctx.args]
        name, command, rest = command.resolve_command(ctx, rest)
        ctx = command.make_context(name, rest, parent=ctx)
    return ctx.command_path


@contextlib.contextmanager
def readers_world():
    """While parsing: input files the examples name (HPL.dat, a hostfile, cluster.toml) and their
    virtual clusters are the reader's, so a file that is not here is taken as read and a cluster as
    up; everything else is checked. Output folders are made while parsing: in a scratch folder, not
    the checkout. The variables some options' callbacks set are put back."""
    import tempfile

    from rmax.params import InputFile

    read = InputFile.convert
    environ = dict(os.environ)
    with pytest.MonkeyPatch.context() as mp, tempfile.TemporaryDirectory() as scratch:
        mp.chdir(scratch)
        mp.setenv("RMAX_DB", os.path.join(scratch, "results.db"))
        mp.setattr(InputFile, "convert",
                   lambda self, value, param, ctx: read(self, value, param, ctx) if Path(value).exists() else str(value))
        mp.setattr("rmax.vcluster.find", lambda name, how=None: None)
        try:
            yield
        finally:
            os.environ.clear()
            os.environ.update(environ)


def parse_error(args: list[str]) -> str | None:
    """Why `rmax ARGS` does not parse, or None."""
    try:
        with readers_world(), contextlib.redirect_stdout(io.StringIO()):
            parse(args)
    except click.exceptions.Exit as x:      # --help, --version: printed, exit 0
        return f"exit {x.exit_code}" if x.exit_code else None
    except click.ClickException as x:
        return x.format_message()
    except RmaxError as x:                  # rmax's own value types refuse with RmaxError
        return str(x)
    return None


def test_the_docs_can_be_read():
    assert not PROBLEMS, "\n".join(PROBLEMS)
    assert len({e.where.split(":")[0] for e in ALL}) >= 6 and sum(e.run is not None for e in ALL) >= 60, \
        "fewer examples found than the docs hold: is the extraction broken?"


def test_every_doc_example_parses():
    failures = [f"{e.where}: rmax {shlex.join(args)}: {why}"
                for e in ALL for args in e.commands if (why := parse_error(args))]
    assert not failures, "doc examples that do not parse:\n" + "\n".join(failures)


# Commands this test never runs, marked or not: they measure for long, change the system (a virtual
# cluster, a systemd unit, a drained node, NIC settings) or run until stopped.
NEVER_RUN = ("rmax survey", "rmax bench", "rmax hpl run", "rmax tune", "rmax scale", "rmax vcluster",
             "rmax agent run", "rmax agent install", "rmax agent check", "rmax experiment", "rmax launch check",
             "rmax net doctor")


def never_run(e: Example) -> bool:
    path = command_path(e.run) + " "
    return e.placeholder or any(path.startswith(p + " ") for p in NEVER_RUN)


def command_path(args: list[str]) -> str:
    try:
        with readers_world(), contextlib.redirect_stdout(io.StringIO()):
            return parse(args)
    except (click.exceptions.Exit, click.ClickException, RmaxError):
        return ""               # test_every_doc_example_parses says why


def test_every_example_not_run_says_what_it_needs():
    unmarked = [f"{e.where}: {e.text}" for e in ALL if e.run is not None and e.needs is None and never_run(e)]
    assert not unmarked, "examples this test does not run need a `# needs: ...` line above them (in README's " \
                         "table, `(needs: ...)` after them):\n" + "\n".join(unmarked)


RUN = [e for e in ALL if e.run is not None and e.needs is None and not never_run(e)]


@pytest.fixture(scope="module")
def reader(tmp_path_factory):
    """A reader going down the docs: one store, fresh, and one scratch folder for the whole module,
    so what an earlier example stored or wrote is there for the later ones, in doc order."""
    folder = tmp_path_factory.mktemp("reader")
    for doc in DOCS:
        for name, text in files(doc):
            (folder / name).write_text(text)
    return folder


def files(path: Path) -> list[tuple[str, str]]:
    """The files a doc gives its examples: a non-shell block whose first line is the comment `# NAME`."""
    out = []
    for lang, lines in BLOCKS[path]:
        m = re.match(r"^#\s*([\w.-]+\.\w+)\s*$", lines[0][1]) if lang not in SHELL_BLOCKS and lines else None
        if m:
            out.append((m.group(1), "\n".join(l for _, l in lines[1:]) + "\n"))
    return out


@pytest.mark.timeout(120)
@pytest.mark.parametrize("example", RUN, ids=[e.where for e in RUN])
def test_example_runs_as_shown(example, reader, monkeypatch):
    monkeypatch.chdir(reader)
    monkeypatch.setenv("RMAX_DB", str(reader / "results.db"))
    code, out, err = run_in_process(example.run, example.env)
    assert "Traceback" not in err, err
    assert code in (0, 1), f"{example.where}: {example.text}: exit {code}\n{err}"
    if code == 1:
        named = NAMED_COMMAND.findall(err)
        assert named, f"{example.where}: {example.text}: exit 1 without naming the command that measures " \
                      f"what is missing:\n{err}"
        for command in named:
            assert parse_error(words(command)[1:]) is None, f"{example.where}: the error names {command!r}, " \
                                                               f"which does not parse: {parse_error(words(command)[1:])}"
