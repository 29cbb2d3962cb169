"""The state file: what `up` planned and every object it (may have) created.

Objects are recorded *before* they are created, so that after an `up` that
crashed half-way the file still lists everything that might exist, and
`down` (which tolerates objects that are already gone) removes exactly that.
The state lives under /run, which is emptied at boot, as the namespaces are."""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from rmax.errors import RmaxError
from rmax.textfile import write_atomic
from rmax.vcluster.cgroups import procs_file
from rmax.vcluster.plan import Plan

DEFAULT_ROOT = "/run/rmax/vcluster"


def root() -> Path:
    return Path(os.environ.get("RMAX_VCLUSTER_DIR", DEFAULT_ROOT))


def cluster_dir(name: str) -> Path:
    return root() / name


@dataclass
class State:
    name: str
    directory: Path
    plan: Plan | None = None
    objects: list[dict] = field(default_factory=list)   # {"kind": ..., "name": ..., "ns": ...}
    complete: bool = False                                # True once up finished

    @property
    def path(self) -> Path:
        return self.directory / "state.json"

    @property
    def hostfile(self) -> Path:
        return self.directory / "hostfile"

    @property
    def agent(self) -> Path:
        return self.directory / "agent"

    @property
    def cluster_toml(self) -> Path:
        return self.directory / "cluster.toml"

    def uts_file(self, node: str) -> Path:
        return self.directory / "uts" / node

    def cgroups(self, node: str) -> list[Path]:
        """The cgroups of a pinned node, one per hierarchy (none: the node shares every CPU)."""
        return [Path(o["name"]) for o in self.objects if o["kind"] == "cgroup" and o.get("node") == node]

    def enter(self, node: str) -> list[str]:
        """The argv prefix that runs a command inside node's network and UTS namespaces and, when the
        node is pinned, inside its cgroups (joined first, so that all the command starts stays there)."""
        ns = ["nsenter", f"--net=/run/netns/{node}", f"--uts={self.uts_file(node)}", "--"]
        joins = [str(procs_file(d)) for d in self.cgroups(node)]
        if not joins:
            return ns
        return ["sh", "-c", 'while [ "$1" != -- ]; do echo $$ >"$1" || exit 126; shift; done; shift; exec "$@"',
                "sh", *joins, "--", *ns]

    def save(self) -> None:
        data = {"name": self.name, "complete": self.complete, "objects": self.objects,
                "plan": self.plan.to_dict() if self.plan else None}
        write_atomic(self.path, json.dumps(data, indent=1), "the cluster's state")   # never half-written

    def record(self, kind: str, name: str, **extra) -> None:
        """Note an object about to be created (the intent log)."""
        self.objects.append({"kind": kind, "name": name, **extra})
        self.save()


def create(name: str) -> State:
    d = cluster_dir(name)
    if (d / "state.json").exists():
        raise RmaxError(f"virtual cluster '{name}' is already up (state in {d})",
                        hint=f"rmax vcluster down --name {name} first, or pick another --name")
    d.mkdir(parents=True, exist_ok=True)
    (d / "uts").mkdir(exist_ok=True)
    st = State(name, d)
    st.save()
    return st


def load(name: str) -> State | None:
    d = cluster_dir(name)
    try:
        data = json.loads((d / "state.json").read_text())
    except FileNotFoundError:
        return None
    except (OSError, json.JSONDecodeError) as e:
        raise RmaxError(f"state file {d / 'state.json'} is unreadable: {e}",
                        hint="remove the cluster's objects by hand (ip netns, ip link) and delete the folder") from None
    plan = Plan.from_dict(data["plan"]) if data.get("plan") else None
    return State(data["name"], d, plan, data.get("objects", []), data.get("complete", False))


def forget(state: State) -> None:
    shutil.rmtree(state.directory, ignore_errors=True)


def names() -> list[str]:
    r = root()
    if not r.is_dir():
        return []
    return sorted(p.name for p in r.iterdir() if (p / "state.json").exists())


def load_all() -> list[State]:
    return [s for s in (load(n) for n in names()) if s is not None]


def find(name: str | None, how: str = "--name NAME") -> State:
    """The named cluster, else $RMAX_VCLUSTER, else the only one that is up. `how` is how the
    command at hand names a cluster, for the hint when several are up."""
    name = name or os.environ.get("RMAX_VCLUSTER")
    if name:
        st = load(name)
        if st is None:
            raise RmaxError(f"no virtual cluster '{name}' is up", hint="rmax vcluster up --name " + name)
        return st
    all_states = [s for s in load_all() if s.complete]
    if not all_states:
        raise RmaxError("no virtual cluster is up", hint="rmax vcluster up --nodes 4 --switches 2")
    if len(all_states) > 1:
        raise RmaxError("several virtual clusters are up: " + ", ".join(s.name for s in all_states),
                        hint=f"name one with {how}")
    return all_states[0]


LAUNCH_HOW = "--vcluster NAME (or RMAX_VCLUSTER=NAME)"   # how commands that launch on a cluster name it
