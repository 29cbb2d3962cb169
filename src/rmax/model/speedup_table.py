"""`rmax model speedup`'s table: one generalised Amdahl curve (model/amdahl.py) per combination of
the times given, each curve's best N, and its speedup at the table's rows (powers of two up to the
largest N, that N, and every best N); the curves drawn as an SVG."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rmax.model.amdahl import AmdahlParams, BestN, best_n, speedup
from rmax.model.plots import Curve, speedup_svg


def table_points(max_n: int, extra=()) -> list[int]:
    """Rows of the speedup table: powers of two up to max_n, max_n itself, and any extra N (best N)."""
    pts = {1, max_n, *(e for e in extra if e and 1 <= e <= max_n)}
    k = 2
    while k < max_n:
        pts.add(k)
        k *= 2
    return sorted(pts)


@dataclass(frozen=True)
class SpeedupTable:
    form: str                   # amdahl.FORMS
    curves: list[AmdahlParams]
    bests: list[BestN]          # one per curve
    rows: list[int]             # the N of the rows
    data: list[dict]            # per curve: its params, best N and speedup at every row (as --json shows it)


def speedup_table(ts: list[float], tp: list[float], tis: list[float], tip: list[float], quadratic: bool,
                  max_n: int) -> SpeedupTable:
    form = "quadratic" if quadratic else ("linear" if any(tis) else "amdahl")
    curves = [AmdahlParams(a, b, c, d, form) for a in ts for b in tp for c in tis for d in tip]
    bests = [best_n(c.ts, c.tp, c.tis, c.tip, c.form, max_n=max_n) for c in curves]
    rows = table_points(max_n, [b.n for b in bests])
    data = [{"params": c.as_dict(), "best": b.as_dict(),
             "points": [{"n": n, "speedup": float(speedup(n, c.ts, c.tp, c.tis, c.tip, c.form))} for n in rows]}
            for c, b in zip(curves, bests)]
    return SpeedupTable(form, curves, bests, rows, data)


def label(c: AmdahlParams) -> str:
    return f"Ts={c.ts:g} Tp={c.tp:g} Tis={c.tis:g} Tip={c.tip:g}"


def write_plot(path: str, table: SpeedupTable, max_n: int) -> None:
    """Every curve at every N from 1 to max_n, as an SVG at path."""
    ns = np.arange(1, max_n + 1)
    speedup_svg(path, [Curve(label(c), ns.tolist(), speedup(ns, c.ts, c.tp, c.tis, c.tip, c.form).tolist())
                       for c in table.curves],
                title=f"Generalised Amdahl speedup, Tis x {'N^2' if table.form == 'quadratic' else 'N'}")
