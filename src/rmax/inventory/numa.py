"""NUMA nodes from /sys/devices/system/node."""

from __future__ import annotations

import re

from rmax.inventory.probe import listdir, parse_cpulist, read_text, read_value

SYS_NODE = "/sys/devices/system/node"


def parse_node_meminfo(text: str) -> dict[str, int]:
    """'Node 0 MemTotal:  4810964 kB' -> {'MemTotal': bytes}."""
    out = {}
    for line in text.splitlines():
        m = re.match(r"Node\s+\d+\s+(\w+):\s+(\d+)(\s*kB)?", line)
        if m:
            out[m.group(1)] = int(m.group(2)) * (1024 if m.group(3) else 1)
    return out


def collect_numa(root: str = SYS_NODE) -> dict:
    nodes = []
    for d in listdir(root):
        if not (d.startswith("node") and d[4:].isdigit()):
            continue
        cpulist, why_cpu = read_value(f"{root}/{d}/cpulist")
        meminfo, why_mem = read_text(f"{root}/{d}/meminfo")
        mem = parse_node_meminfo(meminfo) if meminfo else {}
        reasons = {}
        if cpulist is None:
            reasons["cpus"] = why_cpu
        if "MemTotal" not in mem:
            reasons["memory_bytes"] = why_mem or "no MemTotal in node meminfo"
        distance, _ = read_value(f"{root}/{d}/distance")
        nodes.append({"id": int(d[4:]), "cpus": parse_cpulist(cpulist) if cpulist else None,
                      "memory_bytes": mem.get("MemTotal"), "free_bytes": mem.get("MemFree"),
                      "distances": [int(x) for x in distance.split()] if distance else None,
                      "reasons": reasons})
    nodes.sort(key=lambda n: n["id"])
    reasons = {} if nodes else {"count": f"no node directories under {root} (kernel without NUMA)"}
    return {"count": len(nodes) or None, "nodes": nodes, "reasons": reasons}
