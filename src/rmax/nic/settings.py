"""A node's NIC settings: per interface the MTU, link speed, driver, interrupt
coalescing (ethtool -c), offloads (ethtool -k) and IPv4 networks.

Runs where the node is: directly, inside a virtual-cluster namespace, or as
one rank per node through a launcher (`python -m rmax.nic.settings` prints
one JSON line). A setting that cannot be read is None, never a guess."""

from __future__ import annotations

import ipaddress
import json
import re
import shutil
import socket
import subprocess
import sys

# The offloads that change per-packet CPU cost, and so latency and bandwidth.
OFFLOADS = ("tcp-segmentation-offload", "generic-segmentation-offload", "generic-receive-offload",
            "large-receive-offload", "rx-checksumming", "tx-checksumming")
COALESCE_KEYS = ("rx-usecs", "rx-frames", "tx-usecs", "tx-frames", "rx-usecs-irq")


def _ethtool(*args: str) -> str | None:
    if not shutil.which("ethtool"):
        return None
    try:
        p = subprocess.run(["ethtool", *args], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return p.stdout if p.returncode == 0 else None


def parse_coalesce(text: str | None) -> dict | None:
    """`ethtool -c` -> {"adaptive_rx": bool, "rx-usecs": int, ...}; None when unsupported."""
    if not text:
        return None
    out: dict = {}
    m = re.search(r"Adaptive RX:\s*(on|off)\s+TX:\s*(on|off)", text)
    if m:
        out["adaptive_rx"], out["adaptive_tx"] = m.group(1) == "on", m.group(2) == "on"
    for key in COALESCE_KEYS:
        m = re.search(rf"^{re.escape(key)}:\s*(\d+)", text, re.MULTILINE)
        if m:
            out[key] = int(m.group(1))
    return out or None


def parse_offloads(text: str | None) -> dict | None:
    if not text:
        return None
    out = {}
    for key in OFFLOADS:
        m = re.search(rf"^{re.escape(key)}:\s*(on|off)", text, re.MULTILINE)
        if m:
            out[key] = m.group(1) == "on"
    return out or None


def parse_driver(text: str | None) -> str | None:
    m = re.search(r"^driver:\s*(\S+)", text or "", re.MULTILINE)
    return m.group(1) if m else None


def _networks() -> dict[str, list[str]]:
    try:
        p = subprocess.run(["ip", "-j", "-4", "addr", "show"], capture_output=True, text=True, timeout=10)
        links = json.loads(p.stdout or "[]")
    except (OSError, subprocess.TimeoutExpired, json.JSONDecodeError):
        return {}
    return {l["ifname"]: [str(ipaddress.ip_interface(f"{a['local']}/{a['prefixlen']}").network)
                          for a in l.get("addr_info", []) if a.get("family") == "inet"] for l in links}


def _links() -> list[dict]:
    """Interfaces from netlink, not /sys: /sys shows the namespace it was mounted in,
    which is wrong for a process that entered a node's namespace with nsenter."""
    try:
        p = subprocess.run(["ip", "-j", "link", "show"], capture_output=True, text=True, timeout=10)
        return json.loads(p.stdout or "[]")
    except (OSError, subprocess.TimeoutExpired, json.JSONDecodeError):
        return []


def parse_speed(text: str | None) -> tuple[int | None, str | None]:
    """`ethtool IFACE` -> (Mb/s, duplex); None where unknown."""
    m = re.search(r"Speed:\s*(\d+)\s*Mb/s", text or "")
    d = re.search(r"Duplex:\s*(\w+)", text or "")
    return (int(m.group(1)) if m else None), (d.group(1).lower() if d else None)


def parse_shaped_rate(text: str | None) -> int | None:
    """`tc -j qdisc show dev IFACE` -> the root token bucket's rate in Mb/s, None when unshaped.
    tc reports tbf's rate in bytes/s (tc-tbf(8)); a shaped veth still says 10000 Mb/s to ethtool."""
    try:
        qdiscs = json.loads(text or "[]")
    except json.JSONDecodeError:
        return None
    for q in qdiscs:
        rate = (q.get("options") or {}).get("rate")
        if q.get("root") and q.get("kind") == "tbf" and rate:
            return round(rate * 8 / 1e6)
    return None


def _qdisc(name: str) -> str | None:
    try:
        p = subprocess.run(["tc", "-j", "qdisc", "show", "dev", name], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return p.stdout if p.returncode == 0 else None


def effective_speed(iface: dict) -> int | None:
    """Mb/s traffic can leave at: the shaper's rate where there is one, else the link speed."""
    known = [v for v in (iface.get("speed_mbps"), iface.get("shaped_mbps")) if v]
    return min(known) if known else None


def interface(link: dict, networks: dict[str, list[str]]) -> dict:
    name = link["ifname"]
    speed, duplex = parse_speed(_ethtool(name))
    return {
        "name": name,
        "mtu": link.get("mtu"),
        "speed_mbps": speed,
        "shaped_mbps": parse_shaped_rate(_qdisc(name)),
        "duplex": duplex,
        "state": (link.get("operstate") or "unknown").lower(),
        "driver": parse_driver(_ethtool("-i", name)),
        "coalesce": parse_coalesce(_ethtool("-c", name)),
        "offloads": parse_offloads(_ethtool("-k", name)),
        "networks": networks.get(name, []),
    }


def collect() -> dict:
    """This node's interfaces (not lo), with the node's host name."""
    nets = _networks()
    links = sorted((l for l in _links() if l.get("ifname") != "lo"), key=lambda l: l["ifname"])
    return {"schema": "rmax.nic/1", "host": socket.gethostname(), "interfaces": [interface(l, nets) for l in links]}


if __name__ == "__main__":
    sys.stdout.write(json.dumps(collect()) + "\n")
