"""Network interfaces: name, driver, link speed, MTU and interrupt coalescing.

/sys/class/net shows the interfaces of the network namespace sysfs was mounted in, not
necessarily this process's: a virtual cluster's node (or a container entered with
`nsenter --net`) sees the host's there. When sysfs's interfaces are not this namespace's
(socket.if_nameindex asks the kernel for ours), each interface is read through netlink
(`ip -j -d link`) and ethtool, which answer for this namespace."""

from __future__ import annotations

import json
import os
import re
import socket
from typing import Callable

from rmax.inventory.probe import int_or_none, listdir, read_value, run

SYS_NET = "/sys/class/net"


def parse_ethtool_coalesce(text: str) -> dict:
    """`ethtool -c IFACE` -> {'rx-usecs': 0, 'adaptive-rx': 'off', ...}; 'n/a' fields are left out."""
    out: dict = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("Coalesce parameters"):
            continue
        if line.startswith(("Adaptive", "CQE mode")):
            # 'Adaptive RX: off  TX: n/a' holds two fields on one line
            prefix = "adaptive" if line.startswith("Adaptive") else "cqe-mode"
            body = line.split(None, 1)[1] if prefix == "adaptive" else line[len("CQE mode"):]
            parts = body.replace(":", " ").split()
            for name, value in zip(parts[::2], parts[1::2]):
                if value != "n/a":
                    out[f"{prefix}-{name.lower()}"] = value
            continue
        key, sep, value = line.partition(":")
        value = value.strip()
        if sep and value and value != "n/a":
            out[key.strip()] = int(value) if value.lstrip("-").isdigit() else value
    return out


def parse_ethtool_info(text: str) -> dict:
    """`ethtool -i IFACE` -> {'driver': 'virtio_net', 'version': '1.0.0', ...}."""
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and value.strip():
            out[key.strip()] = value.strip()
    return out


def link_speed(name: str, root: str = SYS_NET) -> tuple[int | None, str | None]:
    """Link speed in Mbit/s as the driver reports it."""
    value, why = read_value(f"{root}/{name}/speed")
    if value is None:
        return None, f"driver reports no link speed ({why.split(': ', 1)[-1]})"
    speed = int_or_none(value)
    if speed is None or speed <= 0:
        return None, f"driver reports no link speed (sysfs speed = {value}; usual for virtio and virtual links)"
    return speed, None


def _ethtool(name: str) -> tuple[dict, str | None, dict | None, str | None]:
    """(driver info, why not, coalescing settings or None, why not) from `ethtool -i` and `-c`:
    ioctls that answer for this process's network namespace."""
    info_text, why_info = run(["ethtool", "-i", name], timeout=3)
    co_text, why_co = run(["ethtool", "-c", name], timeout=3)
    return (parse_ethtool_info(info_text) if info_text else {}, why_info,
            parse_ethtool_coalesce(co_text) if co_text else None, why_co)


def collect_sysfs(name: str, root: str = SYS_NET) -> dict:
    d = f"{root}/{name}"
    reasons: dict[str, str] = {}
    has_device = os.path.exists(f"{d}/device")
    driver = None
    if has_device:
        link = os.path.realpath(f"{d}/device/driver")
        driver = os.path.basename(link) if os.path.exists(link) else None
    info, why_info, coalesce, why_co = _ethtool(name)
    driver = driver or info.get("driver")
    if driver is None:
        reasons["driver"] = ("no driver: virtual interface" if not has_device else
                             why_info or "no driver link in sysfs")
    speed, why = link_speed(name, root)
    if speed is None:
        reasons["speed_mbps"] = why
    mtu = int_or_none(read_value(f"{d}/mtu")[0])
    if mtu is None:
        reasons["mtu"] = f"{d}/mtu unreadable"
    if coalesce is None:
        reasons["coalesce"] = why_co
    kind = "loopback" if read_value(f"{d}/type")[0] == "772" else ("device" if has_device else "virtual")
    entry = {"name": name, "kind": kind, "driver": driver, "bus_info": info.get("bus-info") or None,
             "speed_mbps": speed, "mtu": mtu, "operstate": None, "address": None, "coalesce": coalesce,
             "reasons": reasons}
    if entry["bus_info"] is None:
        reasons["bus_info"] = "not on a bus: virtual interface" if not has_device else (why_info or "not reported")
    for field in ("operstate", "address"):
        entry[field], why = read_value(f"{d}/{field}")
        if entry[field] is None:
            reasons[field] = why
    return entry


def sysfs_is_ours(root: str = SYS_NET) -> bool:
    """Whether sysfs's interfaces (names and indexes) are this network namespace's."""
    try:
        ours = {name: idx for idx, name in socket.if_nameindex()}
    except OSError:
        return True
    return ours == {n: int_or_none(read_value(f"{root}/{n}/ifindex")[0]) for n in listdir(root)}


def interfaces(root: str = SYS_NET) -> tuple[list[str], Callable[[str], dict]]:
    """This namespace's interface names and the reader of one, decided once (sysfs_is_ours reads
    every interface's index: a host with a large virtual cluster up has hundreds)."""
    if sysfs_is_ours(root):
        return listdir(root), lambda name: collect_sysfs(name, root)
    return sorted(name for _, name in socket.if_nameindex()), collect_netlink


def collect_netlink(name: str) -> dict:
    """One interface of this namespace read through netlink and ethtool (sysfs shows another's)."""
    reasons: dict[str, str] = {}
    text, why = run(["ip", "-j", "-d", "link", "show", "dev", name], timeout=3)
    try:
        link = (json.loads(text) or [{}])[0] if text else {}
    except ValueError:
        link, why = {}, "ip -j printed no JSON"
    info, why_info, coalesce, why_co = _ethtool(name)
    virtual_kind = (link.get("linkinfo") or {}).get("info_kind")
    kind = "loopback" if link.get("link_type") == "loopback" else ("virtual" if virtual_kind else "device")
    driver = info.get("driver") or virtual_kind
    if driver is None:
        reasons["driver"] = why_info or "not reported"
    speed_text, why_speed = run(["ethtool", name], timeout=3)
    m = re.search(r"Speed:\s*(\d+)\s*Mb/s", speed_text or "")
    speed = int(m.group(1)) if m else None
    if speed is None:
        reasons["speed_mbps"] = why_speed or "driver reports no link speed (usual for virtual links)"
    if coalesce is None:
        reasons["coalesce"] = why_co
    entry = {"name": name, "kind": kind, "driver": driver, "bus_info": info.get("bus-info") or None,
             "speed_mbps": speed, "mtu": link.get("mtu"), "operstate": (link.get("operstate") or "").lower() or None,
             "address": link.get("address"), "coalesce": coalesce, "reasons": reasons}
    if entry["bus_info"] is None:
        reasons["bus_info"] = "not on a bus: virtual interface" if kind != "device" else (why_info or "not reported")
    for field in ("mtu", "operstate", "address"):
        if entry[field] is None:
            reasons[field] = why or f"ip link shows no {field}"
    return entry
