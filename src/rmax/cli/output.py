"""Printing conventions shared by the commands: --json, rich tables, progress."""

from __future__ import annotations

import json
import math
import os
import sys
from contextlib import contextmanager

import click
from rich.console import Console

from rmax.terminal import UNFOLDED

# Text is printed as written: labels, host names, errors and sources come from users and the
# system, and rich would read "[network]" or "[/]" in them as markup (dropping it, or failing)
# and ":name:" as an emoji. Styling is explicit (rich.text.Text, style=).
class _Console(Console):
    def on_broken_pipe(self) -> None:
        # rich exits 1 when the reader leaves (`| head`); the command's top (cli/app.py) makes it a quiet 0
        raise BrokenPipeError


# A pipe or a file gets every table row and line whole (grep, awk and wc -l count rows), not folded
# at 80 columns, and tables as plain columns (rmax.terminal); a terminal, or a COLUMNS the user set, gets
# that width.
console = _Console(highlight=False, markup=False, emoji=False,
                   width=None if sys.stdout.isatty() or "COLUMNS" in os.environ else UNFOLDED)
err_console = _Console(stderr=True, highlight=False, markup=False, emoji=False)

json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")


def _clean(obj):
    """JSON cannot say NaN: a value that could not be measured is null."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    return obj


def print_json(data) -> None:
    sys.stdout.write(json.dumps(_clean(data), indent=2, default=str) + "\n")


@contextmanager
def progress(description: str, total: float | None = None):
    """A progress bar on stderr (hidden when stderr is not a terminal); yields an advance(n) function."""
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn   # 0.03 s

    bar = Progress(SpinnerColumn(), TextColumn("{task.description}", style="progress.description", markup=False),
                   BarColumn(),
                   TextColumn("{task.percentage:>3.0f}%" if total else ""), TimeElapsedColumn(),
                   console=err_console, transient=True, disable=not err_console.is_terminal)
    with bar:
        task = bar.add_task(description, total=total)

        def advance(n: float = 1, description: str | None = None) -> None:
            bar.update(task, advance=n, **({"description": description} if description else {}))

        yield advance


def run_and_show(name: str, start, show, as_json: bool) -> None:
    """What every `rmax bench` command does with its run: start it under a progress bar
    (`start(tick)`, tick called once per line of kernel output), print its JSON or `show(record)`,
    and end with exit status 1 when the stored run is not ok (failed, or its own validation failed)."""
    from rmax.errors import RunFailed

    with progress(name) as advance:
        record = start(lambda *_: advance(1))
    if as_json:
        print_json(record.as_dict())
    else:
        show(record)
    if record.status != "ok":
        raise RunFailed(f"{record.kind} run {record.id[:8]} is {record.status}: {record.error}")


def printable(text: str) -> str:
    """Stored or quoted text as one line: a newline or escape sequence in it (a label, a kernel's
    error) must not add lines or drive the terminal of whoever reads it."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def fmt(value, spec: str = ".2f", none: str = "—") -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return none
    return format(value, spec)
