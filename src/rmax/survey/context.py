"""What every survey step gets: the store, the parent survey run, the hosts, the time budget."""

from __future__ import annotations

import socket
from dataclasses import dataclass, field
from typing import Callable

from rmax.launch import Host, LaunchSpec
from rmax.store import Store
from rmax.survey.plan import Plan


@dataclass
class SurveyContext:
    store: Store
    survey_id: str
    hosts: list[Host] | None       # None: this node only
    quick: bool
    budget: float                  # seconds for the whole survey
    launcher: str | None = None
    timeout: float = 600.0
    facts: dict = field(default_factory=dict)   # what earlier steps learned (rates, memory) for later ones
    tune_budget: float | None = None            # seconds: a tuning session replaces the single HPL run
    out_dir: str | None = None                  # where files a step writes go (the tuned HPL.dat)
    steps: tuple[str, ...] = ()                 # the names of the steps this survey runs
    on_progress: Callable[[str, str], None] | None = None   # (step, short text) while a step runs: "hpl: 45% ..."
    plan: Plan | None = None                    # each step's seconds and sizes (plan.py), made after the inventory
    waiting: object | None = None               # fanout.Waiting: nodes still in the inventory's launch, for the
                                                # per-node steps that follow it

    def step_timeout(self, step: str) -> float:
        """A step's watchdog: its planned seconds with a margin (plan.StepPlan.timeout), at most --timeout."""
        planned = self.plan.get(step) if self.plan else None
        return min(self.timeout, planned.timeout(len(self.nodes))) if planned and not planned.before else \
            self.timeout

    @property
    def nodes(self) -> list[Host]:
        return self.hosts or [Host(socket.gethostname(), LaunchSpec(program=[]).slots)]

    @property
    def multi_node(self) -> bool:
        return len(self.nodes) > 1

    @property
    def ranks(self) -> int:
        return sum(h.slots for h in self.nodes)
