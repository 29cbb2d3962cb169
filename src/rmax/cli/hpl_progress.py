"""HPL's progress as it runs (rmax.hpl.progress events), on stderr: a rich bar per test on a
terminal, else a plain line at every tenth of a test's work."""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Callable, Iterator

from rich.progress import BarColumn, Progress, TextColumn

from rmax.cli.output import err_console
from rmax.hpl.progress import Progress as HplProgress


def line(p: HplProgress) -> str:
    return (f"hpl test {p.test}/{p.tests} (N={p.n}): {100 * p.fraction:.0f}% of the work, {p.elapsed_s:.1f} s, "
            f"{p.gflops:.2f} GFLOPS (running rate)")


@contextmanager
def hpl_progress(enabled: bool = True) -> Iterator[Callable[[HplProgress], None] | None]:
    """Yields the on_progress callback of a RunContext (None when not enabled)."""
    if not enabled:
        yield None
        return
    if not err_console.is_terminal:
        shown: dict[int, int] = {}      # test -> tenths of its work last printed

        def plain(p: HplProgress) -> None:
            tenth = int(10 * p.fraction + 1e-9)
            if tenth > shown.get(p.test, -1):
                shown[p.test] = tenth
                err_console.print(line(p), soft_wrap=True)

        yield plain
        return
    bar = Progress(TextColumn("{task.description}", markup=False), BarColumn(),
                   TextColumn("{task.percentage:>3.0f}% of the work"),
                   TextColumn("{task.fields[elapsed]:.1f} s"), TextColumn("{task.fields[gflops]:.2f} GFLOPS (running rate)"),
                   console=err_console, redirect_stdout=sys.stdout.isatty())   # HPL's text, when it is echoed
    tasks: dict[int, int] = {}

    def update(p: HplProgress) -> None:
        if p.test not in tasks:
            for t in tasks.values():        # one bar at a time: HPL's own result lines tell the finished tests
                bar.update(t, visible=False)
            tasks[p.test] = bar.add_task(f"test {p.test}/{p.tests} N={p.n}", total=1.0, elapsed=0.0, gflops=0.0)
        bar.update(tasks[p.test], completed=p.fraction, elapsed=p.elapsed_s, gflops=p.gflops)

    with bar:
        yield update
