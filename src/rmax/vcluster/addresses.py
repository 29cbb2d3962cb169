"""Choosing the cluster's private subnet so that it collides with nothing.

"Nothing" is: every address and route of the host (all routing tables), the
addresses inside every existing network namespace (other tools' test nets),
and the subnets of other rmax virtual clusters. The namespaces are isolated
from the host, so a clash would not misroute traffic today, but a user who
later bridges the cluster to the host, or reads `ip addr`, must never meet
two meanings of one address."""

from __future__ import annotations

import ipaddress
import json
import subprocess
from typing import Iterable, Iterator

from rmax.errors import RmaxError

Network = ipaddress.IPv4Network


def _ip_json(argv: list[str]) -> list[dict]:
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return []
    if out.returncode != 0 or not out.stdout.strip():
        return []
    try:
        return json.loads(out.stdout)
    except json.JSONDecodeError:
        return []


def _addr_networks(records: list[dict]) -> Iterator[Network]:
    for link in records:
        for a in link.get("addr_info", []):
            if a.get("family") == "inet":
                yield ipaddress.ip_network(f"{a['local']}/{a.get('prefixlen', 32)}", strict=False)


def _route_networks(records: list[dict]) -> Iterator[Network]:
    for r in records:
        dst = r.get("dst")
        if not dst or dst == "default":
            continue  # the default route would "collide" with everything; it is not a local network
        try:
            yield ipaddress.ip_network(dst if "/" in dst else f"{dst}/32", strict=False)
        except ValueError:
            continue


def networks_in_use(other_subnets: Iterable[str] = ()) -> list[Network]:
    """Every IPv4 network this machine already uses, host and namespaces."""
    used = list(_addr_networks(_ip_json(["ip", "-j", "-4", "addr", "show"])))
    used += _route_networks(_ip_json(["ip", "-j", "-4", "route", "show", "table", "all"]))
    for ns in _ip_json(["ip", "-j", "netns", "list"]):
        used += _addr_networks(_ip_json(["ip", "-n", ns["name"], "-j", "-4", "addr", "show"]))
    used += [ipaddress.ip_network(s) for s in other_subnets]
    return used


def prefix_for(nodes: int) -> int:
    """The longest prefix (at most /24, to keep addresses readable) with room for every node."""
    p = 24
    while p > 8 and (2 ** (32 - p) - 2) < nodes:
        p -= 1
    if 2 ** (32 - p) - 2 < nodes:
        raise RmaxError(f"{nodes} nodes need more addresses than any private subnet rmax allocates",
                        hint="use fewer --nodes")
    return p


def candidates(prefixlen: int) -> Iterator[Network]:
    """Private ranges in a fixed order, rarely-used corners first (10.213.x before 10.0.x)."""
    ranges = ["10.213.0.0/16", "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"]
    for r in ranges:
        block = ipaddress.ip_network(r)
        if block.prefixlen <= prefixlen:
            yield from block.subnets(new_prefix=prefixlen)


def choose_subnet(nodes: int, requested: str | None, other_subnets: Iterable[str] = ()) -> str:
    used = networks_in_use(other_subnets)
    if requested:
        try:
            net = ipaddress.ip_network(requested, strict=False)
        except ValueError:
            raise RmaxError(f"--subnet '{requested}' is not an IPv4 network", hint="e.g. 10.213.7.0/24") from None
        if net.version != 4 or not net.is_private:
            raise RmaxError(f"--subnet {net} is not a private IPv4 range", hint="use 10/8, 172.16/12 or 192.168/16")
        clash = next((u for u in used if u.overlaps(net)), None)
        if clash:
            raise RmaxError(f"--subnet {net} overlaps {clash}, already used on this machine",
                            hint="pick another subnet, or omit --subnet to have one chosen")
        return str(net)
    for net in candidates(prefix_for(nodes)):
        if not any(u.overlaps(net) for u in used):
            return str(net)
    raise RmaxError("no free private IPv4 subnet found for the virtual cluster", hint="give one with --subnet")
