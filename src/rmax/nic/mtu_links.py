"""The links an MTU experiment changes, and the probe that measures across them, behind one
interface (`Links`) with two back-ends:

- `VclusterLinks`: every link of a virtual cluster at once (node ends, switch ports, trunks,
  bridges), probed by the cluster's own TCP probe between the first node, its neighbour on the
  same switch and a node behind a trunk when there is one;
- `HostLinks`: named interfaces of real hosts, read and set through the launcher, probed by
  rmax-net's TCP layer between the first two hosts.

Both read the original MTUs when they are made, before the experiment stores a run, so that an
interface that is missing refuses the experiment before anything changed or was stored."""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Callable, ClassVar, Protocol

from rmax.bench.family import RunContext
from rmax.families import get, loaded, run as run_family
from rmax.bench.netlaunch import check_message_sizes
from rmax.errors import RmaxError, RunFailed
from rmax.launch import Host, LaunchSpec, read_hostfile
from rmax.nic import mtu as mt
from rmax.vcluster import find
from rmax.vcluster.probe import measure_matrix
from rmax.vcluster.system import require_root


class Links(Protocol):
    """What the experiment needs of the links it changes."""

    where: str                  # what changes, for people: 'virtual cluster c1', 'eth1 of a, b'
    hosts: list[str]            # the hosts the experiment's run is stored under
    between: list[str]          # the hosts the probe measures between
    size: int                   # bytes per bandwidth transfer of the probe
    params: dict                # the back-end's part of the run's params
    summary: dict               # and of its summary
    hpl_hosts: list[Host]       # where the short HPL runs, and how it is launched there
    hpl_hostfile: str | None
    launcher: str | None

    def changes(self) -> AbstractContextManager[Callable[[int], dict | None]]:
        """Yields apply(mtu), which sets mtu on every link and returns what the hosts report
        afterwards (None where they report nothing); on exit the original MTUs are back."""

    def probe(self, store, parent: str, mtu: int, repeat: int, runs: list[str]) -> dict:
        """Latency and bandwidth across the links (the units shown: us, MB/s), stored under parent;
        each run stored is appended to runs as it starts, so that a failed probe's runs are named
        too. An RmaxError when traffic failed."""


def _scaled(value, factor: float):
    return None if value is None else value * factor


@dataclass
class VclusterLinks:
    state: object               # rmax.vcluster.state.State
    between: list[str]
    size: int
    ends: list[mt.LinkEnd]
    original: dict[str, int]
    hpl_hosts: list[Host]

    launcher = "vcluster"
    summary: ClassVar[dict] = {}  # nothing of its own

    @classmethod
    def of(cls, name: str | None, size: int) -> VclusterLinks:
        """The virtual cluster named (or the only one up), its probe's nodes and its links' MTUs."""
        require_root("rmax experiment mtu")
        state = find(name, "--vcluster NAME")
        plan = state.plan
        # Probe the first node's nearest neighbour, and a node behind a trunk when there is one.
        same = [n.name for n in plan.nodes[1:] if n.switch == plan.nodes[0].switch]
        other = [n.name for n in plan.nodes if n.switch != plan.nodes[0].switch]
        between = [plan.nodes[0].name] + same[:1] + other[:1]
        if len(between) < 2:
            raise RmaxError("the virtual cluster needs at least 2 nodes for an MTU experiment")
        ends = mt.vcluster_links(state)
        return cls(state, between, size, ends, mt.link_mtus(ends), read_hostfile(state.hostfile))

    @property
    def where(self) -> str:
        return f"virtual cluster {self.state.name}"

    @property
    def hosts(self) -> list[str]:
        return [n.name for n in self.state.plan.nodes]

    @property
    def params(self) -> dict:
        return {"cluster": self.state.plan.name}

    @property
    def hpl_hostfile(self) -> str:
        return str(self.state.hostfile)

    def changes(self):
        return mt.mtu_changes(self.ends, self.original)

    def probe(self, store, parent: str, mtu: int, repeat: int, runs: list[str]) -> dict:
        with store.start_run("tcp-matrix", parent=parent, label=f"MTU {mtu} repeat {repeat}", hosts=self.between,
                             params={"cluster": self.state.plan.name, "mtu": mtu, "bytes": self.size,
                                     "repeat": repeat}) as pr:
            runs.append(pr.id)
            m = measure_matrix(self.state, self.between, size=self.size, pings=200)
            pr.update(summary={k: v for k, v in m.items() if k != "samples"}, samples=m["samples"])
        # near (same switch) and far (across a trunk, when there is one)
        lat, bw = m["latency_s"][0], m["bandwidth_Bps"][0]
        out = {"latency_us": _scaled(lat[1], 1e6), "bandwidth_MBps": _scaled(bw[1], 1e-6)}
        if len(m["hosts"]) > 2:
            out.update(trunk_latency_us=_scaled(lat[2], 1e6), trunk_bandwidth_MBps=_scaled(bw[2], 1e-6))
        return out


@dataclass
class HostLinks:
    interfaces: list[str]
    hpl_hosts: list[Host]
    hpl_hostfile: str | None
    launcher: str | None
    size: int
    timeout: float
    original: dict[str, dict[str, int]]

    @classmethod
    def of(cls, interfaces, hosts: list[Host], hostfile: str | None, launcher: str | None, size: int,
           timeout: float) -> HostLinks:
        """The interfaces named on these hosts (2 or more), their MTUs read on every host through the
        launcher before anything changes."""
        names = mt.check_interfaces(interfaces)
        if len(hosts) < 2:
            got = f"only {hosts[0].name}" if hosts else "none"
            raise RmaxError(f"an MTU experiment on real interfaces needs at least 2 hosts ({got} given): "
                            "the MTU matters between nodes", hint="give --hosts a,b or --hostfile FILE")
        check_message_sizes([size], "--bytes")
        original = {h.name: mt.host_mtus(h.name, names, launcher) for h in hosts}
        return cls(names, list(hosts), hostfile, launcher, size, timeout, original)

    @property
    def hosts(self) -> list[str]:
        return [h.name for h in self.hpl_hosts]

    @property
    def between(self) -> list[str]:
        return self.hosts[:2]

    @property
    def where(self) -> str:
        return f"{', '.join(self.interfaces)} of {', '.join(self.hosts)}"

    @property
    def params(self) -> dict:
        return {"interfaces": self.interfaces, "hosts": self.hosts, "pair": self.between, "launcher": self.launcher,
                "original_mtus": self.original}

    @property
    def summary(self) -> dict:
        return {"hosts": self.hosts, "interfaces": self.interfaces, "original_mtus": self.original}

    def changes(self):
        return mt.host_mtu_changes(self.hosts, self.interfaces, self.launcher, self.original)

    def probe(self, store, parent: str, mtu: int, repeat: int, runs: list[str]) -> dict:
        # one repeat per rmax-net run: the experiment's own repeats alternate the MTUs between runs
        net = get("net")
        options = net.options(layers=("tcp",), sizes=tuple(sorted({1, self.size})), perturb=False, repeats=1)
        pair = LaunchSpec([], np=2, hosts=[Host(h, 1) for h in self.between])
        rec = run_family(net, options, RunContext(store=store, parent=parent, spec=pair, launcher=self.launcher,
                                                  timeout=self.timeout))
        runs.append(rec.id)
        if rec.status != "ok":
            raise RunFailed(f"rmax-net {rec.status}: {rec.error}")
        # latency at 1 byte and bandwidth at size bytes
        got = loaded(rec)
        lat, bw = (got[1].point("tcp", 1), got[1].point("tcp", self.size)) if got else (None, None)
        if not lat or not bw or not lat[2].latency or not bw[2].bandwidth:
            raise RunFailed(f"the TCP layer reported no latency at 1 byte or no bandwidth at {self.size} bytes")
        return {"latency_us": lat[2].latency * 1e6, "bandwidth_MBps": bw[2].bandwidth * 1e-6}
