"""Which stored runs may answer a question, and how a derived figure cites them.

A model's input measured on other hosts, another transport or another build
of the software answers another question: a local 1x2 prediction must not
take its latency from a pair of virtual-cluster nodes, nor calibrate on tests
that ran across eight namespaces. A `Scope` says what the question is about;
`matches` keeps the runs measured there; `cite` names a run the way every
derived figure names its sources (id, date, hosts, ranks)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from rmax.store.runs import RunRecord


def this_host() -> str:
    return os.uname().nodename


def run_hosts(run: RunRecord) -> list[str]:
    """The distinct hosts a run's ranks ran on (a local run records none, or rmax's own host)."""
    hosts = list(dict.fromkeys(h for h in (run.hosts or []) if isinstance(h, str) and h))
    return hosts or [run.hostname or this_host()]


@dataclass(frozen=True)
class Scope:
    """The machines a question is about: this node alone (nodes == 1), or several nodes,
    named when `hosts` is given. `fingerprint`: the node's hardware and software (CPU,
    memory, kernel, MPI, BLAS); runs measured under another one do not match."""
    nodes: int = 1
    hosts: tuple[str, ...] | None = None
    fingerprint: str | None = None

    @classmethod
    def here(cls, nodes: int = 1, hosts: list[str] | None = None) -> "Scope":
        from rmax.bench.runner import fingerprint

        return cls(nodes, tuple(dict.fromkeys(hosts)) if hosts else None, fingerprint())

    def describe(self) -> str:
        if self.hosts:
            return f"hosts {', '.join(self.hosts)}"
        return f"this node ({this_host()})" if self.nodes == 1 else f"{self.nodes} nodes (runs across several hosts)"

    def _same_machine(self, run: RunRecord, fingerprint: str | None) -> bool:
        fp = fingerprint or run.fingerprint
        return not (self.fingerprint and fp and fp != self.fingerprint)

    def on_a_node(self, run: RunRecord) -> bool:
        """Whether a single-node run (DGEMM, STREAM) was measured on one node of the scope."""
        hosts = run_hosts(run)
        if len(hosts) != 1 or not self._same_machine(run, None):
            return False
        return hosts[0] in self.hosts if self.hosts else hosts[0] == this_host()

    def matches(self, run: RunRecord, fingerprint: str | None = None) -> bool:
        """Whether `run` (or, for a child, its parent's `fingerprint`) was measured where the question is."""
        if not self._same_machine(run, fingerprint):
            return False
        hosts = set(run_hosts(run))
        if self.hosts:
            return hosts <= set(self.hosts) and (len(hosts) > 1) == (len(self.hosts) > 1)
        if self.nodes == 1:
            return hosts == {this_host()}
        return len(hosts) > 1


def cite(run: RunRecord, ranks: int | None = None) -> str:
    """'net run 3fa2c1d0 (2026-11-23, hosts a, b, 2 ranks)'."""
    np_ = ranks if ranks is not None else run.params.get("np")
    hosts = run_hosts(run)
    where = f"host {hosts[0]}" if len(hosts) == 1 else f"hosts {', '.join(hosts)}"
    return f"{run.kind} run {run.id[:8]} ({run.started_at[:10]}, {where}" + (f", {np_} ranks)" if np_ else ")")
