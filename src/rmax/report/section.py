"""A report section and the registry of section builders by run kind.

A builder turns the runs of one kind into a Section: a title, tables of
already-formatted cells, inline SVG plots, notes, and the data behind them
(written beside the report as CSV and JSON)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from rmax.store.runs import RunRecord


@dataclass
class Table:
    columns: list[str]
    rows: list[list[str]]
    caption: str | None = None


@dataclass
class Section:
    key: str
    title: str
    tables: list[Table] = field(default_factory=list)
    plots: list[str] = field(default_factory=list)          # SVG text (trusted: made by matplotlib here)
    notes: list[str] = field(default_factory=list)          # plain text, escaped in the template
    data: dict[str, list[dict]] = field(default_factory=dict)  # name -> rows, downloadable as CSV/JSON
    order: int = 50


BUILDERS: dict[str, Callable[[list[RunRecord]], list[Section]]] = {}


def builder(*kinds: str):
    def deco(fn):
        for k in kinds:
            BUILDERS[k] = fn
        return fn
    return deco
