"""Node classes: nodes alike in what sets their speed (CPU model and cores, memory, NICs), read from
a survey's inventory runs, so that a mixed cluster is judged class by class. Clock and free memory
are left out: they change from boot to boot on one node. Memory is rounded to whole GiB (the
kernel's own reserve differs by a few MiB between alike nodes). NICs are the devices (a bus's
interfaces, not loopback, bridges, veths and tunnels, which come and go with containers and virtual
clusters), counted by driver and speed."""

from __future__ import annotations

from dataclasses import dataclass

from rmax.store.runs import RunRecord

UNKNOWN = "unknown (no inventory)"


@dataclass(frozen=True)
class NodeClass:
    cpu: str
    cores: int | None
    memory_gib: int | None
    nics: tuple[str, ...]       # "N x driver speed" of the NIC devices, sorted

    @property
    def name(self) -> str:
        parts = [self.cpu] + ([f"{self.cores} cores"] if self.cores else []) + (
            [f"{self.memory_gib} GiB"] if self.memory_gib is not None else []) + list(self.nics)
        return ", ".join(parts)


def node_class(summary: dict) -> NodeClass:
    """The class of one node's inventory summary (`rmax info --json`'s)."""
    cpu = summary.get("cpu") or {}
    mem = (summary.get("memory") or {}).get("total_bytes")
    counts: dict[str, int] = {}
    for i in (summary.get("nics") or {}).get("interfaces") or []:
        if i.get("kind") != "device":
            continue
        speed = f"{i['speed_mbps']} Mb/s" if i.get("speed_mbps") else "speed unknown"
        name = f"{i.get('driver') or 'NIC'} {speed}"
        counts[name] = counts.get(name, 0) + 1
    nics = [f"{n} x {name}" for name, n in counts.items()]
    model = " ".join(str(x) for x in (cpu.get("vendor"), cpu.get("model")) if x) or "CPU unknown"
    return NodeClass(model, cpu.get("cores"), round(mem / 2 ** 30) if isinstance(mem, (int, float)) else None,
                     tuple(sorted(nics)))


def latest_inventories(infos: list[RunRecord]) -> dict[str, RunRecord]:
    """node -> its latest ok inventory run."""
    latest: dict[str, RunRecord] = {}
    for r in infos:
        if r.kind == "info" and r.status == "ok" and len(r.hosts) == 1:
            if r.hosts[0] not in latest or r.started_at >= latest[r.hosts[0]].started_at:
                latest[r.hosts[0]] = r
    return latest


def classes(infos: list[RunRecord], nodes: list[str]) -> dict[str, str]:
    """node -> its class's name, from the latest ok inventory run of each node; a node without one is
    in a class of its own kind, UNKNOWN."""
    latest = latest_inventories(infos)
    return {n: node_class(latest[n].summary).name if n in latest else UNKNOWN for n in nodes}
