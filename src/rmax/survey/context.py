"""What every survey step gets: the store, the parent survey run, the hosts, the time budget."""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass, field
from typing import Callable

from rmax.launch import Host, LaunchSpec
from rmax.store import Store


@dataclass
class SurveyContext:
    store: Store
    survey_id: str
    hosts: list[Host] | None       # None: this node only
    quick: bool
    budget: float                  # seconds for the whole survey
    launcher: str | None = None
    timeout: float = 600.0
    started: float = field(default_factory=time.monotonic)
    facts: dict = field(default_factory=dict)   # what earlier steps learned (rates, memory) for later ones
    tune_budget: float | None = None            # seconds: a tuning session replaces the single HPL run
    out_dir: str | None = None                  # where files a step writes go (the tuned HPL.dat)
    steps: tuple[str, ...] = ()                 # the names of the steps this survey runs
    on_progress: Callable[[str, str], None] | None = None   # (step, short text) while a step runs: "hpl: 45% ..."

    @property
    def nodes(self) -> list[Host]:
        return self.hosts or [Host(socket.gethostname(), LaunchSpec(program=[]).slots)]

    @property
    def multi_node(self) -> bool:
        return len(self.nodes) > 1

    @property
    def ranks(self) -> int:
        return sum(h.slots for h in self.nodes)

    def remaining(self) -> float:
        return self.budget - (time.monotonic() - self.started)

    def node_spec(self, program: list[str], host: Host | None = None) -> LaunchSpec:
        """One process on one node (this one, or `host` through the MPI launcher)."""
        return LaunchSpec(program=program, np=1, hosts=[Host(host.name, host.slots)] if host and self.hosts else None)
