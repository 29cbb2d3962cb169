"""A report section and the registry of section builders by run kind.

A builder turns the runs of one kind into a Section: a title, tables of
already-formatted cells, inline SVG plots, notes, and the data behind them
(written beside the report as CSV and JSON)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from rmax.store.runs import RunRecord


FOLD_ROWS = 12   # a table longer than this is raw data: folded under the plots, its cells also as CSV


@dataclass
class Table:
    columns: list[str]
    rows: list[list[str]]
    caption: str | None = None
    csv: str | None = None   # the name of its cells' CSV in data/, set when it is written (folded tables)
    answer: bool = False     # what the page is read for (the summary's): in view however long

    @property
    def folded(self) -> bool:
        return not self.answer and len(self.rows) > FOLD_ROWS


@dataclass
class Section:
    key: str
    title: str
    tables: list[Table] = field(default_factory=list)
    plots: list[str] = field(default_factory=list)          # SVG text (trusted: made by matplotlib here)
    notes: list[str] = field(default_factory=list)          # plain text, escaped in the template
    warnings: list[str] = field(default_factory=list)       # plain text shown first: what to doubt (a busy node)
    lead: str | None = None                                 # the section's answer in a line, before its plots and tables
    data: dict[str, list[dict]] = field(default_factory=dict)  # name -> rows, downloadable as CSV/JSON
    order: int = 50


def sentence(heading: str) -> str:
    """A heading in sentence case: its first letter capitalised, the rest as written (acronyms
    and units keep their case), so headings of every family read alike."""
    return heading[:1].upper() + heading[1:]


BUILDERS: dict[str, Callable[[list[RunRecord]], list[Section]]] = {}


def builder(*kinds: str):
    def deco(fn):
        for k in kinds:
            BUILDERS[k] = fn
        return fn
    return deco
