"""The terminal's table: rich's, except that a cell too wide for its column folds onto the next
line instead of ending in "…". rich cuts by default, and a cut number is a wrong number
(1.072e+05 shown as "1.072…", 116.0 as "11…" on a narrow terminal)."""

from __future__ import annotations

from rich.table import Table as _RichTable


class Table(_RichTable):
    def add_column(self, *args, **kwargs) -> None:
        kwargs.setdefault("overflow", "fold")
        super().add_column(*args, **kwargs)
