"""What a family shows, independent of where it is shown: the figures of a
headline, tables of formatted cells, and plot specifications. The terminal
(rich) and the HTML report (jinja2, matplotlib) render the same objects, so a
number printed in both places is the same number from the same field."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

Path = tuple  # keys and indexes into a stored summary, e.g. ("results", "triad/2", "best")


def resolve(obj: Any, path: Path) -> Any:
    """The value at `path` in a summary: dataclass attributes, dict keys and list indexes alike,
    so the same path reads a typed summary and the JSON the store keeps of it."""
    for part in path:
        if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            obj = getattr(obj, part)
        else:
            obj = obj[part]
    return obj


@dataclass(frozen=True)
class Figure:
    """One number a family stands behind: what it is, its value, unit and statistic, and where in
    the stored summary it comes from (value == resolve(summary, path) * scale)."""

    key: str              # stable name to pair runs by, e.g. "triad.2" (unique within the family)
    metric: str           # for people: "STREAM Triad (2 threads)"
    value: float
    unit: str
    statistic: str        # which statistic, over what
    path: Path
    scale: float = 1.0    # a unit change from the stored field (MB/s -> GB/s)
    better: str = "higher"   # or "lower" (latencies, times)
    role: str | None = None  # what it stands for in cross-family reasoning (see ROLES)
    repeats: tuple[float, ...] = ()   # independent repeats of the same figure (same scale), when the run has them
    # What it was measured at, when that can differ between runs of one key (a working set, a
    # sweep's range): figures of one key pair (compare, spread across nodes) only at the same `at`.
    at: str | None = None


# The roles a figure may play for readers that combine families (the survey's verdicts, % of peak).
ROLES = {
    "peak": "measured floating-point peak of all cores",
    "dgemm_node": "DGEMM rate of one process with the threads it ran",
    "dgemm_shape": "DGEMM rate of one process at a given shape m x n x k (HPL's trailing update)",
    "triad": "STREAM Triad bandwidth of all cores",
    "memory_latency": "load latency of a random pointer chain beyond the caches",
    "mpi_latency": "MPI one-way latency, 1 byte, between two nodes",
    "mpi_bandwidth": "MPI bandwidth, 1 MiB, between two nodes",
    "hpl_rmax": "HPL's best rate",
    "rpeak_nominal": "nominal Rpeak: cores x clock x flops per cycle",
    "peak_basis": "the peak that % of peak is computed against",
    "cluster_peak": "the sum of the nodes' peak bases, for % of peak of a run on several nodes",
    "dgemm_bound": "what HPL could reach if it were all DGEMM",
}


def figure(summary: Any, path: Path, key: str, metric: str, unit: str, statistic: str, *, scale: float = 1.0,
           better: str = "higher", role: str | None = None, repeats: Path | None = None,
           at: str | None = None) -> Figure | None:
    """The figure at `path` of `summary`, or None when the field is absent or not a number.
    `repeats`: the path of the same figure's independent repeats, if any; `at`: see Figure."""
    try:
        value = resolve(summary, path)
    except (KeyError, IndexError, AttributeError, TypeError):
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    reps: tuple[float, ...] = ()
    if repeats is not None:
        try:
            reps = tuple(float(x) * scale for x in resolve(summary, repeats) if isinstance(x, (int, float)))
        except (KeyError, IndexError, AttributeError, TypeError):
            reps = ()
    if role is not None and role not in ROLES:
        raise ValueError(f"unknown figure role {role}")
    return Figure(key, metric, float(value) * scale, unit, statistic, tuple(path), scale, better, role, reps, at)


def sweep_at(sizes: list[int]) -> str:
    """The `at` of a figure chosen from a sweep (its best point): the sweep's range and length."""
    from rmax.sizes import human_bytes

    return f"{human_bytes(min(sizes))}-{human_bytes(max(sizes))}, {len(sizes)} sizes"


def plain(value: float) -> str:
    """Four significant digits without an exponent for everyday magnitudes (112700, not 1.127e+05)."""
    if value == 0 or not math.isfinite(value) or not 1e-3 <= abs(value) < 1e15:
        return f"{value:.4g}"
    if abs(value) < 1e4:
        return f"{value:.4g}"
    return f"{round(value, 3 - math.floor(math.log10(abs(value)))):.0f}"


def cell(value: float | None, spec: str = ".2f") -> str:
    """A number as a table cell; '—' when unknown."""
    return "—" if value is None else format(value, spec)


@dataclass
class Table:
    columns: list[str]
    rows: list[list[str]]
    caption: str | None = None
    left: int = 1           # how many leading columns are labels (left-aligned in the terminal)


@dataclass
class Plot:
    """A plot to draw: kind "line" (series of (x, y)), "bar" (labels, values) or "heatmap"."""

    kind: str
    title: str
    xlabel: str = ""
    ylabel: str = ""
    series: dict[str, tuple[list, list]] = field(default_factory=dict)
    logx: bool = False
    logy: bool = False
    vlines: dict[str, float] = field(default_factory=dict)
    labels: list[str] = field(default_factory=list)          # bar labels, heatmap axis labels
    values: list = field(default_factory=list)               # bar heights, heatmap rows
    # The spread behind each point, as stored (min-max of timed blocks): a line series' band, label ->
    # (lows, highs) at its xs; a bar's error bar, (low, high) per bar.
    bands: dict[str, tuple[list, list]] = field(default_factory=dict)
    errors: list[tuple[float, float]] = field(default_factory=list)


@dataclass
class View:
    """Everything a family shows of one run: tables, notes under them, and the data behind them."""

    tables: list[Table] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    data: dict[str, list[dict]] = field(default_factory=dict)   # name -> rows (the report's CSV/JSON)
