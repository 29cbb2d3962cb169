"""Cost-benefit in the manner of Table Two of Eadline and Layton's Kronos value-cluster
article (Cluster Monkey), and what-if alternatives.

cluster.toml (format in docs/COST.md) says what the cluster is and costs; the
GFLOPS come from measured HPL runs, and for alternatives that were never built,
from the HPL model. Dollars are whatever currency the file uses."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from rmax.errors import RmaxError


@dataclass(frozen=True)
class Cluster:
    name: str
    nodes: int
    node_price: float
    node_watts: float
    network_price: float = 0.0
    network_watts: float = 0.0
    ranks_per_node: int | None = None        # default: the inventory's cores
    memory_gib: float | None = None          # per node; default: the inventory's
    rpeak_gflops: float | None = None        # per node; default: the inventory's
    latency_us: float | None = None          # network; default: measured
    bandwidth_mbps: float | None = None      # MB/s (10^6 bytes); default: measured

    @property
    def price(self) -> float:
        return self.nodes * self.node_price + self.network_price

    @property
    def watts(self) -> float:
        return self.nodes * self.node_watts + self.network_watts


@dataclass(frozen=True)
class WhatIf:
    name: str
    cluster: Cluster


@dataclass
class ClusterFile:
    cluster: Cluster
    what_if: list[WhatIf] = field(default_factory=list)


# Each field's range: absurd physical inputs are refused (watts = 1e-300 once printed a 300-digit
# MFLOPS per watt), and the bounds keep totals and ratios finite. Per node unless it says total.
RANGES = {"count": (1, 1 << 20), "nodes": (1, 1 << 20), "ranks": (1, 1 << 16),
          "price": (0, 1e15), "node_price": (0, 1e15), "network_price": (0, 1e15),     # network: total
          "watts": (0.1, 1e6), "node_watts": (0.1, 1e6), "network_watts": (0, 1e9),
          "memory_gib": (1e-3, 1 << 20), "rpeak_gflops": (1e-3, 1e7), "latency_us": (0, 1e6),
          "bandwidth_MBps": (1e-3, 1e9)}
MAX_WHAT_IF = 64        # each alternative is a model prediction (and store queries)
MAX_NAME = 200
TOP = {"name", "nodes", "network", "what_if", "switch"}     # [[switch]]: groups read by rmax.topology.declared
NODES = {"count", "price", "watts", "ranks", "memory_gib", "rpeak_gflops"}
NETWORK = {"price", "watts", "latency_us", "bandwidth_MBps"}
WHAT_IF = {"name", "nodes", "node_price", "node_watts", "network_price", "network_watts", "latency_us",
           "bandwidth_MBps", "rpeak_gflops", "memory_gib"}


def _known(table: dict, allowed: set[str], where: str) -> None:
    unknown = set(table) - allowed
    if unknown:
        raise RmaxError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}",
                        hint=f"allowed: {', '.join(sorted(allowed))} (docs/COST.md)")


def _number(table: dict, key: str, where: str, required: bool = False, integer: bool = False, limits: str = ""):
    """table[key], in the range RANGES[limits or key] ([network] watts is a total: network_watts's range)."""
    if key not in table:
        if required:
            raise RmaxError(f"{where}: missing field '{key}'", hint="see docs/COST.md for the format")
        return None
    v = table[key]
    if isinstance(v, bool) or not isinstance(v, (int, float)) or (integer and not isinstance(v, int)):
        raise RmaxError(f"{where}.{key}: expected {'a whole number' if integer else 'a number'}, not {_shown(v)}")
    lo, hi = RANGES[limits or key]
    if not lo <= v <= hi:       # NaN fails too
        raise RmaxError(f"{where}.{key} = {_shown(v)} is outside its range, {lo:g} to {hi:g}",
                        hint="docs/COST.md lists the ranges")
    return v


def _shown(v) -> str:
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def _name(value, where: str) -> str:
    if not isinstance(value, str) or len(value) > MAX_NAME:
        raise RmaxError(f"{where}: name must be a string of at most {MAX_NAME} characters, not {_shown(value)}")
    return value


def parse_cluster(data: dict, source: str = "cluster.toml") -> ClusterFile:
    _known(data, TOP, source)
    nodes = data.get("nodes")
    if not isinstance(nodes, dict):
        raise RmaxError(f"{source}: missing table [nodes]", hint="see docs/COST.md for the format")
    net = data.get("network", {})
    if not isinstance(net, dict):
        raise RmaxError(f"{source}: [network] must be a table")
    if not isinstance(data.get("what_if", []), list):
        raise RmaxError(f"{source}: what_if must be [[what_if]] tables")
    if len(data.get("what_if", [])) > MAX_WHAT_IF:
        raise RmaxError(f"{source}: {len(data['what_if'])} [[what_if]] tables, more than the {MAX_WHAT_IF} accepted")
    w = f"{source} [nodes]"
    n = f"{source} [network]"
    _known(nodes, NODES, w)
    _known(net, NETWORK, n)
    base = Cluster(
        name=_name(data.get("name", "cluster"), source),
        nodes=_number(nodes, "count", w, True, True),
        node_price=_number(nodes, "price", w, True),
        node_watts=_number(nodes, "watts", w, True),
        network_price=_number(net, "price", n) or 0.0,
        network_watts=_number(net, "watts", n, limits="network_watts") or 0.0,
        ranks_per_node=_number(nodes, "ranks", w, integer=True),
        memory_gib=_number(nodes, "memory_gib", w),
        rpeak_gflops=_number(nodes, "rpeak_gflops", w),
        latency_us=_number(net, "latency_us", n),
        bandwidth_mbps=_number(net, "bandwidth_MBps", n),
    )
    alts = []
    for i, t in enumerate(data.get("what_if", [])):
        if not isinstance(t, dict):
            raise RmaxError(f"{source}: [[what_if]] entry {i + 1} must be a table")
        where = f"{source} [[what_if]] {i + 1}"
        _known(t, WHAT_IF, where)
        count = _number(t, "nodes", where, integer=True)
        c = base
        if count is not None:
            # More ports cost more: unless the entry prices its network, it scales with the node count.
            c = replace(c, nodes=count, network_price=base.network_price * count / base.nodes,
                        network_watts=base.network_watts * count / base.nodes)
        for key, attr in (("node_price", "node_price"), ("node_watts", "node_watts"),
                          ("network_price", "network_price"), ("network_watts", "network_watts"),
                          ("latency_us", "latency_us"), ("bandwidth_MBps", "bandwidth_mbps"),
                          ("rpeak_gflops", "rpeak_gflops"), ("memory_gib", "memory_gib")):
            v = _number(t, key, where)
            if v is not None:
                c = replace(c, **{attr: v})
        alts.append(WhatIf(_name(t.get("name", f"alternative {i + 1}"), where), c))
    return ClusterFile(base, alts)


def read_cluster(path: str | Path) -> ClusterFile:
    from rmax.tomlconfig import read_toml

    return parse_cluster(read_toml(path, "cluster file"), str(path))


@dataclass(frozen=True)
class CostFigures:
    """Kronos's Table Two (Eadline and Layton): GFLOPS, % of peak, cost, $/GFLOPS, watts, MFLOPS/W."""
    gflops: float
    price: float
    watts: float
    rpeak_gflops: float | None
    dollars_per_gflops: float
    mflops_per_watt: float
    percent_of_peak: float | None

    def as_dict(self) -> dict:
        return asdict(self)


def cost_figures(gflops: float, price: float, watts: float, rpeak_gflops: float | None = None) -> CostFigures:
    if not (gflops > 0 and math.isfinite(gflops)):
        raise RmaxError(f"GFLOPS must be positive, not {gflops}")
    if price < 0 or watts <= 0:
        raise RmaxError(f"price must be >= 0 and watts > 0 (price {price}, watts {watts})")
    fig = CostFigures(gflops, price, watts, rpeak_gflops, price / gflops, gflops * 1000.0 / watts,
                      100.0 * gflops / rpeak_gflops if rpeak_gflops else None)
    if fig.percent_of_peak is not None and fig.percent_of_peak > 100.0:
        raise RmaxError(f"{gflops:.4g} GFLOPS is {fig.percent_of_peak:.0f}% of the cluster's Rpeak "
                        f"({rpeak_gflops:.4g} GFLOPS): no HPL beats its peak",
                        hint="the rate was measured on other machines, or rpeak_gflops in cluster.toml is too low")
    # Results that overflow or vanish would print as "—" or 0: refuse them instead.
    values = [v for v in asdict(fig).values() if v is not None]
    if not all(math.isfinite(v) for v in values) or (price > 0 and fig.dollars_per_gflops == 0):
        raise RmaxError(f"the cost figures overflow (price {price:g}, watts {watts:g}, GFLOPS {gflops:g})",
                        hint="check the numbers in cluster.toml and --gflops")
    return fig
