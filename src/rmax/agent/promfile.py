"""The node_exporter textfile-collector mode (`rmax agent run --textfile DIR`): the agent's metrics,
as /metrics serves them, written to DIR/rmax.prom whenever they change (each look at the load,
each probe's start and end), so that a node_exporter started with
--collector.textfile.directory=DIR publishes them with its own.

Each version is written whole or not at all (rmax.textfile.write_atomic: a new file renamed over
the old one), so node_exporter never reads half of one; the temporary file's name ends in .tmp,
which node_exporter skips."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from rmax.errors import RmaxError
from rmax.textfile import check_output, write_atomic

NAME = "rmax.prom"


class PromFile:
    def __init__(self, folder: str, echo: Callable[[str], None]):
        # checked (folder exists, a file can be created there) before anything is measured or served
        self.path = check_output(Path(folder) / NAME, "textfile")
        self.echo = echo
        self.failing: str | None = None

    def write(self, metrics: bytes) -> None:
        """Replace the file; a failure (a full disk) is said once and the agent goes on measuring."""
        try:
            write_atomic(self.path, metrics, "textfile")
        except RmaxError as e:
            if e.message != self.failing:
                self.echo(f"textfile: {e.message}; the metrics are still served")
            self.failing = e.message
            return
        if self.failing:
            self.echo(f"textfile: {self.path} written again")
        self.failing = None
