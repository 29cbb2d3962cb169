"""cluster.toml: the cluster's declared switch layout.

    [[switch]]
    name = "sw1"
    nodes = ["node01", "node02"]

Each node is on exactly one switch. Other tables (nodes, costs, ...) may live
in the same file; this module reads only `switch`."""

from __future__ import annotations

import json
from pathlib import Path

from rmax.errors import RmaxError
from rmax.textfile import write_atomic

MAX_NODES = 1 << 20     # node names in all switches together, as cluster.toml's [nodes] count
MAX_NAME = 255          # characters in a switch or node name (a host name's limit)


def read_groups(path: str | Path) -> tuple[list[str], list[list[str]]]:
    """(switch names, node names per switch) from a cluster.toml."""
    from rmax.tomlconfig import read_toml

    p = Path(path)
    data = read_toml(p, "topology file")
    switches = data.get("switch")
    if not isinstance(switches, list) or not switches:
        raise RmaxError(f"{p} declares no switches", hint='add [[switch]] tables with name = "..." and nodes = [...]')
    names, groups, seen = [], [], {}
    for i, sw in enumerate(switches, 1):
        name = sw.get("name", f"switch{i}") if isinstance(sw, dict) else None
        if not isinstance(name, str) or not 0 < len(name) <= MAX_NAME:
            raise RmaxError(f"{p}: switch {i} needs a name of 1 to {MAX_NAME} characters")
        nodes = sw.get("nodes")
        if not isinstance(nodes, list) or not nodes or not all(isinstance(n, str) and 0 < len(n) <= MAX_NAME
                                                              for n in nodes):
            raise RmaxError(f"{p}: switch {name} needs a non-empty list of node names (1 to {MAX_NAME} "
                            "characters each) in 'nodes'")
        for n in nodes:
            if n in seen:
                raise RmaxError(f"{p}: node {n} is on two switches, {seen[n]} and {name}")
            seen[n] = name
        if len(seen) > MAX_NODES:
            raise RmaxError(f"{p} names more than {MAX_NODES} nodes")
        names.append(name)
        groups.append(list(nodes))
    return names, groups


def write_cluster_toml(path: str | Path, groups: list[list[str]], names: list[str] | None = None,
                       note: str | None = None) -> Path:
    p = Path(path)
    names = names or [f"switch{i + 1}" for i in range(len(groups))]
    lines = [f"# {note}"] if note else []
    for name, nodes in zip(names, groups):
        # JSON strings are TOML basic strings: a quote or newline in a name cannot break the file.
        lines += ["", "[[switch]]", f"name = {json.dumps(name)}", "nodes = [" + ", ".join(map(json.dumps, nodes)) + "]"]
    return write_atomic(p, "\n".join(lines).lstrip("\n") + "\n", "the cluster file")
