"""The terminal's table: rich's, except that a cell too wide for its column folds onto the next
line instead of ending in "…". rich cuts by default, and a cut number is a wrong number
(1.072e+05 shown as "1.072…", 116.0 as "11…" on a narrow terminal).

To a pipe or a file (a console `UNFOLDED` wide: no terminal, no COLUMNS set) a table is plain
text: its title, then one line a row, header first, columns padded and two spaces apart, no box
characters, so that grep, awk, cut and wc -l read it. It is also what makes `rmax runs list` quick
there: rich lays 50 rows out cell by cell in about 0.2 s."""

from __future__ import annotations

from rich.segment import Segment
from rich.table import Table as _RichTable
from rich.text import Text

UNFOLDED = 4096     # the width of a console that is no terminal (cli/output.py)


def _plain(cell) -> str | None:
    if isinstance(cell, Text):
        cell = cell.plain
    return " ".join(cell.split("\n")) if isinstance(cell, str) else None


class Table(_RichTable):
    def add_column(self, *args, **kwargs) -> None:
        kwargs.setdefault("overflow", "fold")
        super().add_column(*args, **kwargs)

    def plain_lines(self) -> list[str] | None:
        """The table as plain lines, or None when a cell is something other than text."""
        cols = [[_plain(c.header)] + [_plain(x) for x in c.cells] if self.show_header else
                [_plain(x) for x in c.cells] for c in self.columns]
        if any(v is None for col in cols for v in col):
            return None
        widths = [max(map(len, col), default=0) for col in cols]
        rows = zip(*cols) if cols else []
        lines = ["  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip() for row in rows]
        title = _plain(self.title) if self.title is not None else None
        return ([title] if title else []) + lines

    def __rich_console__(self, console, options):
        lines = self.plain_lines() if not console.is_terminal and options.max_width >= UNFOLDED else None
        if lines is None:
            yield from super().__rich_console__(console, options)
            return
        for line in lines:
            yield Segment(line)
            yield Segment.line()
