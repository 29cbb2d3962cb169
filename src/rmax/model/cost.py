"""Cost-benefit in the manner of seed 01's Table 2, and what-if alternatives.

cluster.toml (format in docs/COST.md) says what the cluster is and costs; the
GFLOPS come from measured HPL runs, and for alternatives that were never built,
from the HPL model. Dollars are whatever currency the file uses."""

from __future__ import annotations

import math
import tomllib
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


def _number(table: dict, key: str, where: str, required: bool = False, positive: bool = False,
            integer: bool = False):
    if key not in table:
        if required:
            raise RmaxError(f"{where}: missing field '{key}'", hint="see docs/COST.md for the format")
        return None
    v = table[key]
    if isinstance(v, bool) or not isinstance(v, (int, float)) or (integer and not isinstance(v, int)):
        raise RmaxError(f"{where}.{key}: expected {'a whole number' if integer else 'a number'}, not {v!r}")
    if not math.isfinite(v) or v < 0 or (positive and v == 0):
        raise RmaxError(f"{where}.{key} must be {'positive' if positive else 'non-negative'}, not {v}")
    return v


def parse_cluster(data: dict, source: str = "cluster.toml") -> ClusterFile:
    nodes = data.get("nodes")
    if not isinstance(nodes, dict):
        raise RmaxError(f"{source}: missing table [nodes]", hint="see docs/COST.md for the format")
    net = data.get("network", {})
    if not isinstance(net, dict):
        raise RmaxError(f"{source}: [network] must be a table")
    w = f"{source} [nodes]"
    n = f"{source} [network]"
    base = Cluster(
        name=str(data.get("name", "cluster")),
        nodes=_number(nodes, "count", w, True, True, True),
        node_price=_number(nodes, "price", w, True),
        node_watts=_number(nodes, "watts", w, True, True),
        network_price=_number(net, "price", n) or 0.0,
        network_watts=_number(net, "watts", n) or 0.0,
        ranks_per_node=_number(nodes, "ranks", w, positive=True, integer=True),
        memory_gib=_number(nodes, "memory_gib", w, positive=True),
        rpeak_gflops=_number(nodes, "rpeak_gflops", w, positive=True),
        latency_us=_number(net, "latency_us", n),
        bandwidth_mbps=_number(net, "bandwidth_MBps", n, positive=True),
    )
    alts = []
    for i, t in enumerate(data.get("what_if", [])):
        if not isinstance(t, dict):
            raise RmaxError(f"{source}: [[what_if]] entry {i + 1} must be a table")
        where = f"{source} [[what_if]] {i + 1}"
        count = _number(t, "nodes", where, positive=True, integer=True)
        c = base
        if count is not None:
            # More ports cost more: unless the entry prices its network, it scales with the node count.
            c = replace(c, nodes=count, network_price=base.network_price * count / base.nodes,
                        network_watts=base.network_watts * count / base.nodes)
        for key, attr in (("node_price", "node_price"), ("node_watts", "node_watts"),
                          ("network_price", "network_price"), ("network_watts", "network_watts"),
                          ("latency_us", "latency_us"), ("bandwidth_MBps", "bandwidth_mbps"),
                          ("rpeak_gflops", "rpeak_gflops"), ("memory_gib", "memory_gib")):
            v = _number(t, key, where, positive=key in ("bandwidth_MBps",))
            if v is not None:
                c = replace(c, **{attr: v})
        unknown = set(t) - {"name", "nodes", "node_price", "node_watts", "network_price", "network_watts",
                            "latency_us", "bandwidth_MBps", "rpeak_gflops", "memory_gib"}
        if unknown:
            raise RmaxError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
        alts.append(WhatIf(str(t.get("name", f"alternative {i + 1}")), c))
    return ClusterFile(base, alts)


def read_cluster(path: str | Path) -> ClusterFile:
    from rmax.textfile import read_text

    p = Path(path)
    text = read_text(p, "cluster file")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise RmaxError(f"{p}: not valid TOML ({e})") from None
    return parse_cluster(data, str(p))


@dataclass(frozen=True)
class CostFigures:
    """Seed 01's Table 2."""
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
    return CostFigures(gflops, price, watts, rpeak_gflops, price / gflops, gflops * 1000.0 / watts,
                       100.0 * gflops / rpeak_gflops if rpeak_gflops else None)
