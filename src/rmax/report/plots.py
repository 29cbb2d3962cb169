"""matplotlib figures as inline SVG text (no files, no network needed to view them)."""

from __future__ import annotations

import io
import math

import matplotlib

matplotlib.use("Agg")  # no display: reports are made on headless nodes
import matplotlib.pyplot as plt  # noqa: E402

from rmax.report.section import sentence  # noqa: E402

plt.rcParams.update({"figure.figsize": (7.0, 3.6), "axes.grid": True, "grid.alpha": 0.3, "font.size": 9,
                     "svg.fonttype": "none"})


def figure():
    fig, ax = plt.subplots()
    return fig, ax


def to_svg(fig) -> str:
    buf = io.StringIO()
    # bbox_inches, not tight_layout: a figure with many series' labels (a node each on a large
    # cluster) grows to hold them, where tight_layout gave up with a warning on the terminal
    fig.savefig(buf, format="svg", bbox_inches="tight")
    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg"):]  # drop the XML prolog so it can sit inside HTML


def _zero_based(ax, values) -> None:
    """A linear axis of non-negative quantities (rates, times) starts at zero, so a spread of a few
    percent looks like a few percent and not like a peak (matplotlib fits the axis to the data)."""
    finite = [v for v in values if isinstance(v, (int, float)) and math.isfinite(v)]   # a gap is None
    if finite and min(finite) >= 0:
        ax.set_ylim(bottom=0)


def line_plot(series: dict[str, tuple[list, list]], xlabel: str, ylabel: str, logx: bool = False,
              logy: bool = False, vlines: dict[str, float] | None = None, title: str | None = None,
              bands: dict[str, tuple[list, list]] | None = None) -> str:
    """bands: label -> (lows, highs) at that series' xs, drawn as a shaded band in its colour."""
    fig, ax = figure()
    ys = []
    for label, (x, y) in series.items():
        (line,) = ax.plot(x, y, marker="o", markersize=2.5, linewidth=1.2, label=label)
        ys += list(y)
        if label in (bands or {}):
            lo, hi = bands[label]
            ax.fill_between(x, lo, hi, color=line.get_color(), alpha=0.2, linewidth=0)
            ys += [*lo, *hi]
    if logx:
        ax.set_xscale("log", base=2)
    if logy:
        ax.set_yscale("log")
    else:
        _zero_based(ax, ys)
    for label, x in (vlines or {}).items():
        ax.axvline(x, linestyle="--", linewidth=0.8, color="gray")
        ax.annotate(label, (x, 1), xycoords=("data", "axes fraction"), rotation=90, va="top", ha="right", fontsize=7)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(sentence(title))
    if len(series) > 1:
        ax.legend(fontsize=7)
    return to_svg(fig)


def bar_plot(labels: list[str], values: list[float], ylabel: str, title: str | None = None,
             errors: list[tuple[float, float]] | None = None) -> str:
    """errors: (low, high) per bar, drawn as an error bar from low to high."""
    fig, ax = figure()
    yerr = None
    if errors:
        yerr = [[max(0.0, v - lo) for v, (lo, _) in zip(values, errors)],
                [max(0.0, hi - v) for v, (_, hi) in zip(values, errors)]]
    ax.bar(range(len(values)), values, yerr=yerr, capsize=3 if yerr else 0, ecolor="#333")
    ax.set_xticks(range(len(values)), labels, rotation=30, ha="right", fontsize=7)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(sentence(title))
    return to_svg(fig)


def heatmap(matrix: list[list[float]], labels: list[str], cbar_label: str, title: str | None = None) -> str:
    import numpy as np

    fig, ax = plt.subplots(figsize=(5.0, 4.2))
    data = np.array(matrix, dtype=float)
    im = ax.imshow(data, cmap="viridis")
    ax.set_xticks(range(len(labels)), labels, rotation=90, fontsize=6)
    ax.set_yticks(range(len(labels)), labels, fontsize=6)
    fig.colorbar(im, ax=ax, label=cbar_label)
    if title:
        ax.set_title(sentence(title))
    return to_svg(fig)


def render(plot) -> str:
    """A family's Plot specification (rmax.bench.view.Plot) as SVG."""
    if plot.kind == "line":
        return line_plot(plot.series, plot.xlabel, plot.ylabel, plot.logx, plot.logy, plot.vlines, plot.title,
                         plot.bands)
    if plot.kind == "bar":
        return bar_plot(plot.labels, plot.values, plot.ylabel, plot.title, plot.errors)
    if plot.kind == "heatmap":
        return heatmap(plot.values, plot.labels, plot.ylabel, plot.title)
    raise ValueError(f"unknown plot kind {plot.kind}")
