"""SVG plots of speedup curves (matplotlib, Agg backend: no display needed)."""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

from rmax.errors import RmaxError
from rmax.textfile import write_atomic


@dataclass
class Curve:
    label: str
    n: list[float]
    s: list[float]


@dataclass
class Points:
    label: str
    n: list[float]
    s: list[float]
    low: list[float] | None = None    # error bar ends (e.g. min and max over repeats)
    high: list[float] | None = None


def speedup_svg(path: str | Path, curves: list[Curve], points: list[Points] | None = None,
                title: str = "Speedup", xlabel: str = "processors N", ylabel: str = "speedup S(N)",
                log: bool = False) -> Path:
    """Write the curves (lines), measured points (markers) and perfect linear speedup (dashed, as in
    Brown, "Maximizing Beowulf Performance")."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = Path(path)
    if path.suffix.lower() != ".svg":
        raise RmaxError(f"plot file {path} must end in .svg")
    fig, ax = plt.subplots(figsize=(7, 4.5))
    try:
        nmax, smax = 1.0, 1.0
        for c in curves:
            ax.plot(c.n, c.s, label=c.label, linewidth=1.5)
            nmax, smax = max(nmax, max(c.n)), max(smax, max(c.s))
        for p in points or []:
            yerr = None
            if p.low is not None and p.high is not None:
                yerr = [[s - lo for s, lo in zip(p.s, p.low)], [hi - s for s, hi in zip(p.s, p.high)]]
            ax.errorbar(p.n, p.s, yerr=yerr, fmt="o", capsize=3, label=p.label)
            nmax, smax = max(nmax, max(p.n)), max(smax, max(p.s))
        top = smax * 1.1
        ax.plot([1, nmax], [1, nmax], linestyle="--", color="grey", linewidth=1, label="linear speedup")
        if log:
            ax.set_xscale("log", base=2)
            ax.set_yscale("log", base=2)
        else:
            ax.set_xlim(0, nmax * 1.02)
            ax.set_ylim(0, top)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        buf = io.BytesIO()
        fig.savefig(buf, format="svg")
    finally:
        plt.close(fig)
    return write_atomic(path, buf.getvalue(), "the plot")
