"""What every survey step gets: the store, the parent survey run, the hosts, the time budget."""

from __future__ import annotations

import socket
import time
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
    lost: dict[str, dict] = field(default_factory=dict)   # host -> {step, why, at_s}: left out of every later step
    checks: list[dict] = field(default_factory=list)      # the reachability checks (survey/reachability.py)
    started: float = field(default_factory=time.monotonic)
    running: tuple[str, float] | None = None   # (step, time.monotonic() it began): the step running now

    def lose(self, host: str, step: str, why: str) -> None:
        """Record a node lost (once: the first step and evidence stand); every later step runs without it."""
        if host not in self.lost:
            self.lost[host] = {"host": host, "step": step, "why": why,
                               "at_s": round(time.monotonic() - self.started, 1)}

    def step_timeout(self, step: str) -> float:
        """A step's watchdog: its planned seconds with a margin (plan.StepPlan.timeout), at most --timeout,
        less what the step has used already when it runs a job again (the plan's "stop at" is the step's,
        however many jobs it takes); at least 1 s (step_left says whether any is left)."""
        return max(1.0, self.step_left(step))

    def step_left(self, step: str) -> float:
        """Seconds left of the step's watchdog, counted from the step's start while it runs."""
        planned = self.plan.get(step) if self.plan else None
        limit = min(self.timeout, planned.timeout(len(self.nodes))) if planned and not planned.before else \
            self.timeout
        if self.running and self.running[0] == step:
            limit -= time.monotonic() - self.running[1]
        return limit

    @property
    def nodes(self) -> list[Host]:
        """The nodes the next step runs on: the survey's, less those lost."""
        if not self.hosts:
            return [Host(socket.gethostname(), LaunchSpec(program=[]).slots)]
        return [h for h in self.hosts if h.name not in self.lost]

    @property
    def multi_node(self) -> bool:
        return len(self.nodes) > 1

    @property
    def ranks(self) -> int:
        return sum(h.slots for h in self.nodes)
