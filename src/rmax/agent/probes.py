"""The probe set: short, fixed measurements through the ordinary benchmark families, each one
stored run labelled `agent`, and the rates read back from a stored run.

Sizes are fixed (a rate is only comparable with its own history when the probe does not change)
and small: each probe takes seconds, the node's four together well under a minute."""

from __future__ import annotations

import socket
from abc import ABC, abstractmethod
from dataclasses import dataclass

from rmax.agent.config import AgentConfig
from rmax.families import headline_figure
from rmax.launch.hosts import local_slots
from rmax.registry import Registry
from rmax.store import Store
from rmax.store.runs import RunRecord
from rmax.units import to_base

LABEL = "agent"   # every probe run carries it; the node's history is its runs with this label
CHECK_LABEL = "agent-check"   # `rmax agent check`'s probes: stored, but no part of the baseline they are judged by


@dataclass(frozen=True)
class Rate:
    """One number a probe publishes: `probe` names the rate (stream_triad), `peer` the other end
    of a ping-pong ('' for the node's own rates)."""

    probe: str
    peer: str
    unit: str               # flops_per_second | bytes_per_second | seconds
    statistic: str
    higher_is_better: bool
    value: float


class Probe(ABC):
    name: str        # as written in the configuration
    kind: str        # the stored run's kind
    per_peer = False

    @abstractmethod
    def run(self, cfg: AgentConfig, store: Store, peer: str | None = None, label: str = LABEL) -> RunRecord:
        """Measure once and store the run (raises RunFailed after storing a failed one)."""

    @abstractmethod
    def rates(self, record: RunRecord) -> list[Rate]:
        """The published rates of one stored run of this probe."""


REGISTRY: Registry = Registry("agent probes", make=lambda cls: cls())   # name -> Probe
register = REGISTRY.register


def run_family(name: str, store: Store, timeout: float, spec=None, launcher: str | None = None, label: str = LABEL,
               **options) -> RunRecord:
    """One probe run of a benchmark family, labelled as the agent's (spec, launcher: a net family's ranks)."""
    from rmax.bench.family import RunContext
    from rmax.families import get, run

    fam = get(name)
    return run(fam, fam.options(True, **options),
               RunContext(store=store, label=label, spec=spec, launcher=launcher, timeout=timeout, quick=True))


def by_kind(kind: str) -> Probe | None:
    return next((p for p in REGISTRY.values() if p.kind == kind), None)


@register
class PeakFlops(Probe):
    name, kind = "peakflops", "peakflops"

    def run(self, cfg, store, peer=None, label=LABEL):
        return run_family("peakflops", store, cfg.probe_timeout, label=label, budget=0.2, precision="double")

    def rates(self, record):
        # the widest instruction set on every core: the node's FMA peak as it runs today
        f = headline_figure(record, "peak")
        return [Rate("peakflops_fp64", "", "flops_per_second", "max", True, f.value * 1e9)] if f else []


@register
class Dgemm(Probe):
    name, kind = "dgemm", "dgemm"
    ORDER = 1024

    def run(self, cfg, store, peer=None, label=LABEL):
        return run_family("dgemm", store, cfg.probe_timeout, label=label, sizes=(self.ORDER,), sweep="square",
                          budget=0.3, threads=local_slots())

    def rates(self, record):
        f = headline_figure(record, "dgemm_node")   # one size measured: the best is that size's median (GFLOPS)
        return [Rate("dgemm", "", "flops_per_second", "median", True, f.value * 1e9)] if f else []


@register
class Stream(Probe):
    name, kind = "stream", "stream"

    def run(self, cfg, store, peer=None, label=LABEL):
        return run_family("stream", store, cfg.probe_timeout, label=label, mode="all", budget=0.3)

    def rates(self, record):
        f = headline_figure(record, "triad")
        # STREAM's rule: the best repetition, in bytes/s from the figure's unit
        return [Rate("stream_triad", "", "bytes_per_second", "best", True, to_base(f.value, f.unit))] if f else []


@register
class MemoryLatency(Probe):
    name, kind = "memlat", "memlat"

    @staticmethod
    def working_set() -> int:
        """Four times the largest cache (STREAM's rule for leaving the caches), 256 MiB if unknown."""
        from rmax.inventory.caches import sysfs_levels

        caches = sysfs_levels()
        return 4 * max(caches.values()) if caches else 256 << 20

    def run(self, cfg, store, peer=None, label=LABEL):
        size = self.working_set()
        return run_family("memlat", store, cfg.probe_timeout, label=label, budget=1.0, pattern="random", min_size=size,
                          max_size=size)

    def rates(self, record):
        f = headline_figure(record, "memory_latency")
        return [Rate("memory_latency", "", "seconds", "min", False, f.value * 1e-9)] if f else []


@register
class PingPong(Probe):
    name, kind, per_peer = "pingpong", "net", True
    BANDWIDTH_SIZE = 1 << 20

    def run(self, cfg, store, peer=None, label=LABEL):
        from rmax.launch import Host, LaunchSpec

        spec = LaunchSpec(program=[], np=2, hosts=[Host(socket.gethostname(), 1), Host(peer, 1)])
        return run_family("net", store, cfg.probe_timeout, label=label, spec=spec, launcher=cfg.launcher,
                          layers=("mpi",), sizes=(1, self.BANDWIDTH_SIZE), perturb=False, budget=0.05, max_samples=50)

    def rates(self, record):
        hosts = record.params.get("hosts") or []
        peer = hosts[1] if len(hosts) > 1 else ""
        lat, bw = headline_figure(record, "mpi_latency"), headline_figure(record, "mpi_bandwidth")
        out = []
        if lat and lat.value:   # the figures are in us and MB/s (10^6 B)
            out.append(Rate("pingpong_latency", peer, "seconds", "median", False, lat.value * 1e-6))
        if bw and bw.value:
            out.append(Rate("pingpong_bandwidth", peer, "bytes_per_second", "median", True, bw.value * 1e6))
        return out


def steps(cfg: AgentConfig) -> list[tuple[Probe, str | None]]:
    """The probe set in order: (probe, peer) per stored run."""
    out = []
    for name in cfg.probe_names:
        p = REGISTRY[name]
        out += [(p, peer) for peer in cfg.peers] if p.per_peer else [(p, None)]
    return out
