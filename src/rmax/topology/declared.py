"""cluster.toml: the cluster's declared switch layout.

    [[switch]]
    name = "sw1"
    nodes = ["node01", "node02"]

Each node is on exactly one switch. Other tables (nodes, costs, ...) may live
in the same file; this module reads only `switch`."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

from rmax.errors import RmaxError


def read_groups(path: str | Path) -> tuple[list[str], list[list[str]]]:
    """(switch names, node names per switch) from a cluster.toml."""
    from rmax.textfile import read_text

    p = Path(path)
    try:
        data = tomllib.loads(read_text(p, "cluster file"))
    except tomllib.TOMLDecodeError as e:
        raise RmaxError(f"{p} is not valid TOML: {e}") from None
    switches = data.get("switch")
    if not isinstance(switches, list) or not switches:
        raise RmaxError(f"{p} declares no switches", hint='add [[switch]] tables with name = "..." and nodes = [...]')
    names, groups, seen = [], [], {}
    for i, sw in enumerate(switches, 1):
        name = sw.get("name", f"switch{i}") if isinstance(sw, dict) else None
        nodes = sw.get("nodes") if isinstance(sw, dict) else None
        if not isinstance(nodes, list) or not nodes or not all(isinstance(n, str) and n for n in nodes):
            raise RmaxError(f"{p}: switch {name or i} needs a non-empty list of node names in 'nodes'")
        for n in nodes:
            if n in seen:
                raise RmaxError(f"{p}: node {n} is on two switches, {seen[n]} and {name}")
            seen[n] = name
        names.append(str(name))
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
    p.write_text("\n".join(lines).lstrip("\n") + "\n")
    return p
