"""The layout of a virtual cluster, decided before anything is created.

Pure: names, addresses, which node hangs off which switch, which trunks join
the switches. `up` then creates exactly this plan and `down` removes it, so
the plan (recorded in the state file) is the single source of truth."""

from __future__ import annotations

import ipaddress
import re
from dataclasses import asdict, dataclass, field

from rmax.errors import RmaxError

# Short: Linux interface names are at most 15 characters and every bridge and
# veth name embeds the cluster name.
NAME_RE = re.compile(r"^[a-z][a-z0-9]{0,5}$")
IFNAMSIZ = 15
# chain: s1-s2-s3...; mesh: a trunk between every two switches; star: every
# switch's trunk goes to one spine bridge that holds no node (a two-level tree).
TRUNK_KINDS = ("chain", "mesh", "star")

_RATE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([kmgt]?)(bit|bps)?\s*$", re.IGNORECASE)
_SCALE = {"": 1, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}


def parse_rate(text: str, what: str) -> int:
    """'1gbit', '100mbit', '500kbit' -> bits/s. 'bps' means bytes/s, as it does for tc."""
    m = _RATE.match(text or "")
    if not m:
        raise RmaxError(f"{what} '{text}' is not a rate", hint="e.g. 1gbit, 100mbit, 500kbit")
    value = float(m.group(1)) * _SCALE[m.group(2).lower()]
    if (m.group(3) or "bit").lower() == "bps":
        value *= 8
    if value < 8000:
        raise RmaxError(f"{what} '{text}' is below 8 kbit/s, too slow for any MPI traffic")
    return int(value)


def format_rate(bits: int | None) -> str:
    if not bits:
        return "unshaped"
    for unit, scale in (("gbit", 1e9), ("mbit", 1e6), ("kbit", 1e3)):
        if bits >= scale:
            return f"{bits / scale:g}{unit}"
    return f"{bits}bit"


@dataclass
class Node:
    name: str          # host name = network namespace name = UTS host name
    index: int
    switch: int
    address: str       # IPv4 on eth0 inside the namespace
    veth: str          # host-side end of the node's link, a port of its switch's bridge
    cpus: list[int] = field(default_factory=list)   # its own CPUs when pinned (--pin-cpus); empty: all shared

    @property
    def mac(self) -> str:
        """eth0's address: locally administered, from the IPv4 address's last three bytes, so unique
        within the cluster's subnet and known to every node without asking (static neighbours)."""
        b = ipaddress.IPv4Address(self.address).packed
        return f"02:72:78:{b[1]:02x}:{b[2]:02x}:{b[3]:02x}"


@dataclass
class Trunk:
    a: int             # switch indices
    b: int
    end_a: str         # veth end attached to bridge a
    end_b: str


@dataclass
class Plan:
    name: str
    subnet: str
    nodes: list[Node]
    switches: list[str]                # bridge names, index = switch number
    trunks: list[Trunk]
    trunk_kind: str
    link_rate: int | None              # bits/s, None = unshaped
    trunk_rate: int | None
    mtu: int
    slots: int
    extra: dict = field(default_factory=dict)

    @property
    def prefixlen(self) -> int:
        return ipaddress.ip_network(self.subnet).prefixlen

    @property
    def pinned(self) -> bool:
        return any(n.cpus for n in self.nodes)

    def node(self, name: str) -> Node:
        for n in self.nodes:
            if n.name == name:
                return n
        raise RmaxError(f"virtual cluster '{self.name}' has no node '{name}'",
                        hint="nodes: " + ", ".join(n.name for n in self.nodes))

    @property
    def leaves(self) -> list[str]:
        """The bridges nodes hang off, in switch order (a star's spine, last, holds none)."""
        held = {n.switch for n in self.nodes}
        return [br for s, br in enumerate(self.switches) if s in held]

    @property
    def spine(self) -> str | None:
        """The bridge that joins a star's switches (it holds no node); None in a chain or mesh."""
        spare = [br for br in self.switches if br not in self.leaves]
        return spare[0] if spare else None

    def groups(self) -> list[list[str]]:
        """Node names per leaf switch: the declared topology."""
        per = [[n.name for n in self.nodes if n.switch == s] for s in range(len(self.switches))]
        return [g for g in per if g]

    def tree(self) -> list[list[list[str]]]:
        """The declared tree bottom-up, as `rmax.topology.infer` reports one: the leaf switches'
        groups, then all nodes (under the spine of a star, or the trunks of a chain or mesh,
        which declare no level between)."""
        groups = self.groups()
        return [groups, [[n.name for n in self.nodes]]] if len(groups) > 1 else [groups]

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "Plan":
        d = dict(d)
        d["nodes"] = [Node(**n) for n in d["nodes"]]
        d["trunks"] = [Trunk(**t) for t in d["trunks"]]
        return cls(**d)


def parse_sizes(text: str) -> list[int]:
    """'4,3,3' -> [4, 3, 3]: the node count of each switch, in switch order."""
    parts = [p.strip() for p in (text or "").split(",")]
    if not all(p.isdigit() for p in parts):
        raise RmaxError(f"--switch-sizes '{text}' is not a list of node counts", hint="e.g. --switch-sizes 4,3,3")
    sizes = [int(p) for p in parts]
    if min(sizes) < 1:
        raise RmaxError(f"--switch-sizes '{text}' has an empty switch: every switch needs at least one node")
    return sizes


def check_counts(nodes: int, switches: int, trunk_kind: str, mtu: int, slots: int,
                 sizes: list[int] | None = None) -> None:
    """Bad input is refused here, before root is even checked, with what is missing named."""
    if sizes is not None:
        if len(sizes) != switches:
            raise RmaxError(f"--switch-sizes gives {len(sizes)} switches but --switches is {switches}",
                            hint="leave --switches out: the sizes say how many")
        if sum(sizes) != nodes:
            raise RmaxError(f"--switch-sizes adds up to {sum(sizes)} nodes but --nodes is {nodes}")
    if nodes < 1:
        raise RmaxError(f"--nodes must be at least 1, not {nodes}")
    if switches < 1:
        raise RmaxError(f"--switches must be at least 1, not {switches}: every node needs a switch to attach to")
    if switches > nodes:
        raise RmaxError(f"{switches} switches but only {nodes} nodes: every switch needs at least one node",
                        hint=f"use --switches {nodes} or fewer, or more --nodes")
    if trunk_kind not in TRUNK_KINDS:
        raise RmaxError(f"--trunks must be one of {', '.join(TRUNK_KINDS)}, not '{trunk_kind}'")
    if not 576 <= mtu <= 65535:
        raise RmaxError(f"--mtu {mtu} is outside 576..65535")
    if slots < 1:
        raise RmaxError(f"--slots must be at least 1, not {slots}")


def spread(nodes: int, switches: int, sizes: list[int] | None = None) -> list[int]:
    """Switch index of each node: contiguous blocks, so node order follows switch order; of the
    given sizes, else differing by at most one (5 nodes on 2 switches: 3 + 2)."""
    if sizes is None:
        base, extra = divmod(nodes, switches)
        sizes = [base + (1 if s < extra else 0) for s in range(switches)]
    return [s for s, size in enumerate(sizes) for _ in range(size)]


def trunk_pairs(switches: int, kind: str) -> list[tuple[int, int]]:
    """Switch index pairs joined by a trunk; a star's spine is switch number `switches`."""
    if kind == "chain":
        return [(s, s + 1) for s in range(switches - 1)]
    if kind == "star":
        return [(s, switches) for s in range(switches)] if switches > 1 else []
    return [(a, b) for a in range(switches) for b in range(a + 1, switches)]


def allot_cpus(nodes: int, slots: int, allowed: list[int]) -> list[list[int]]:
    """Each node's own `slots` CPUs, disjoint, in order, from the CPUs rmax may use."""
    if nodes * slots > len(allowed):
        raise RmaxError(f"pinning {nodes} nodes of {slots} slot(s) needs {nodes * slots} CPUs, but this process may "
                        f"use {len(allowed)} ({','.join(map(str, allowed))})",
                        hint="use fewer --nodes or --slots, or go without --pin-cpus")
    cpus = sorted(allowed)
    return [cpus[i * slots:(i + 1) * slots] for i in range(nodes)]


def make_plan(name: str, nodes: int, switches: int, subnet: str, *, trunk_kind: str = "chain",
              link_rate: int | None = None, trunk_rate: int | None = None, mtu: int = 1500,
              slots: int = 1, cpus: list[int] | None = None, sizes: list[int] | None = None) -> Plan:
    """cpus: the CPUs to pin the nodes to (--pin-cpus), `slots` each; None: the nodes share every CPU.
    sizes: nodes per switch (--switch-sizes); None: as even as the counts allow."""
    if not NAME_RE.match(name):
        raise RmaxError(f"cluster name '{name}' must be 1-6 lower-case letters or digits, starting with a letter",
                        hint="interface names embed it and Linux allows only 15 characters")
    check_counts(nodes, switches, trunk_kind, mtu, slots, sizes)
    net = ipaddress.ip_network(subnet, strict=False)
    usable = list(net.hosts())
    if nodes > len(usable):
        raise RmaxError(f"{nodes} nodes need {nodes} addresses but subnet {net} has only {len(usable)}",
                        hint="use a larger --subnet (a smaller prefix length) or fewer --nodes")
    where = spread(nodes, switches, sizes)
    own = allot_cpus(nodes, slots, cpus) if cpus is not None else [[] for _ in range(nodes)]
    node_list = [Node(name=f"{name}-n{i + 1}", index=i, switch=where[i], address=str(usable[i]),
                      veth=f"{name}-n{i + 1}", cpus=own[i]) for i in range(nodes)]
    bridges = [f"{name}-s{s + 1}" for s in range(switches)]
    if trunk_kind == "star" and switches > 1:
        bridges.append(f"{name}-sp")
    trunks = [Trunk(a, b, f"{name}t{a + 1}-{b + 1}a", f"{name}t{a + 1}-{b + 1}b")
              for a, b in trunk_pairs(switches, trunk_kind)]
    for ifname in [*bridges, *(n.veth for n in node_list), *(t.end_a for t in trunks)]:
        if len(ifname) > IFNAMSIZ:
            raise RmaxError(f"interface name '{ifname}' would exceed {IFNAMSIZ} characters",
                            hint="use a shorter --name or fewer nodes or switches")
    return Plan(name=name, subnet=str(net), nodes=node_list, switches=bridges, trunks=trunks,
                trunk_kind=trunk_kind, link_rate=link_rate, trunk_rate=trunk_rate, mtu=mtu, slots=slots)
