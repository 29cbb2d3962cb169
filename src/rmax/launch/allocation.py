"""The nodes of the Slurm allocation rmax runs in (salloc or sbatch), as a host list.

Inside an allocation a multi-node command's default hosts are the allocation's
nodes, not this node: SLURM_JOB_NODELIST in Slurm's hostlist syntax, expanded
as every host list is (rmax.hostlist.expand, no scontrol); slots per node
from --ntasks-per-node when the job gave it, else the CPUs Slurm allocated on
each node (SLURM_JOB_CPUS_PER_NODE, "2(x3),1" meaning 2,2,2,1), divided by
--cpus-per-task (sbatch's manual)."""

from __future__ import annotations

import os
import re

from rmax.errors import RmaxError
from rmax.hostlist import expand
from rmax.launch.hosts import Host

_COUNTS = re.compile(r"^(\d+)(?:\(x(\d+)\))?$")


def expand_counts(text: str) -> list[int]:
    """Slurm's per-node counts: '2(x3),1' -> [2, 2, 2, 1]."""
    out = []
    for item in text.split(","):
        m = _COUNTS.match(item.strip())
        if not m:
            raise RmaxError(f"cannot read Slurm's per-node count '{text}'")
        out += [int(m.group(1))] * int(m.group(2) or 1)
    return out


def allocation_hosts(env: dict[str, str] | None = None) -> list[Host] | None:
    """The allocation's nodes and slots, or None outside an allocation."""
    env = os.environ if env is None else env
    if not env.get("SLURM_JOB_ID"):
        return None
    nodelist = env.get("SLURM_JOB_NODELIST") or env.get("SLURM_NODELIST")
    if not nodelist:
        return None
    names = expand(nodelist, "SLURM_JOB_NODELIST")
    if env.get("SLURM_NTASKS_PER_NODE"):
        slots = [int(env["SLURM_NTASKS_PER_NODE"])] * len(names)
    else:
        per_task = int(env.get("SLURM_CPUS_PER_TASK") or 1)
        slots = [max(1, c // per_task) for c in expand_counts(env.get("SLURM_JOB_CPUS_PER_NODE") or "1")]
    if len(slots) != len(names):
        raise RmaxError(f"the allocation lists {len(names)} nodes but {len(slots)} CPU counts")
    return [Host(n, s) for n, s in zip(names, slots)]
