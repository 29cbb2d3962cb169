"""The one door every strategy measures through: a trial budget, and the
samples measured so far per candidate.

The objective is any function from a sized candidate to a Measurement: a real
HPL execution in a session, the stored exhaustive grid in the benchmark, a pure
function in the tests. Strategies never see which."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable

from rmax.tune.drift import Monitor
from rmax.tune.space import key


class BudgetExhausted(Exception):
    """Raised by Evaluator.sample when no trial is left; strategies let it end their search."""


@dataclass
class Measurement:
    gflops: float | None        # None when the trial failed or was invalid
    status: str = "ok"          # ok | invalid (FAILED residual) | failed (crashed, hung, killed)
    seconds: float = 0.0        # wall time the trial cost, charged to a time budget
    run_id: str | None = None
    time_s: float | None = None  # HPL's own time for the test (seconds excludes launch and check)
    note: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "ok" and self.gflops is not None


@dataclass
class Budget:
    trials: int | None = None
    seconds: float | None = None
    used_trials: int = 0
    used_seconds: float = 0.0
    # Held back for the confirmation at full N: the search may not spend it.
    reserve_trials: int = 0
    reserve_seconds: float = 0.0

    def charge(self, seconds: float) -> None:
        self.used_trials += 1
        self.used_seconds += seconds

    @property
    def exhausted(self) -> bool:
        return self.trials_left <= 0 or self.seconds_left <= 0

    @property
    def trials_left(self) -> float:
        return math.inf if self.trials is None else self.trials - self.used_trials - self.reserve_trials

    @property
    def seconds_left(self) -> float:
        return math.inf if self.seconds is None else self.seconds - self.used_seconds - self.reserve_seconds


@dataclass
class Trial:
    index: int
    cand: dict
    m: Measurement
    at: float = 0.0             # wall time (epoch) when it ended


@dataclass
class Duel:
    """One challenge (rmax.tune.noise.challenge), decided or cut short by the budget: who met whom
    and its verdict (a noise.Verdict; None for a measurement compared with nothing), with the
    block's runs of each (pair i: incumbent_runs[i], challenger_runs[i])."""

    incumbent: dict | None
    challenger: dict
    verdict: object | None
    incumbent_samples: int = 0
    label: str = ""
    incumbent_runs: list = field(default_factory=list)
    challenger_runs: list = field(default_factory=list)
    block: tuple | None = None      # (first trial, last trial) of the block that decided it


@dataclass
class Evaluator:
    objective: Callable[[dict], Measurement]
    budget: Budget
    history: list[Trial] = field(default_factory=list)
    _samples: dict = field(default_factory=dict)
    _invalid: set = field(default_factory=set)
    duels: list[Duel] = field(default_factory=list)   # every challenge, in order (the steps table)
    after: Callable[["Trial"], None] | None = None   # called once each trial is recorded (checkpoints)
    monitor: Monitor = field(default_factory=Monitor)   # the incumbent's level: has the machine changed?
    say: Callable[[str], None] = lambda line: None     # what the session tells as it happens
    retried: int = 0                                     # failed trials run again

    def sample(self, cand: dict) -> float | None:
        """Measure cand once more: its GFLOPS, or None when the trial was invalid or failed twice.
        A failed trial (crashed, killed, hung) is run once more: the failure may be the node's,
        not the candidate's; an invalid one (FAILED residual) is the candidate's."""
        for attempt in (1, 2):
            if self.budget.exhausted:
                raise BudgetExhausted
            m = self.objective(cand)
            self.budget.charge(m.seconds)
            self.history.append(Trial(len(self.history) + 1, cand, m, time.time()))
            if m.ok:
                self._samples.setdefault(key(cand), []).append(m.gflops)
            elif m.status != "failed" or attempt == 2:
                self._invalid.add(key(cand))
            if self.after:
                self.after(self.history[-1])
            if m.ok or m.status != "failed":
                break
            if attempt == 1:
                self.retried += 1
                self.say(f"      trial {len(self.history)} failed: running it once more")
        return m.gflops if m.ok else None

    def samples(self, cand: dict) -> list[float]:
        return list(self._samples.get(key(cand), []))

    def known_bad(self, cand: dict) -> bool:
        """A candidate that once failed or was invalid is never tried again nor made best."""
        return key(cand) in self._invalid

    def mean(self, cand: dict) -> float | None:
        s = self.samples(cand)
        return sum(s) / len(s) if s else None

    def best(self, accept: Callable[[dict], bool] | None = None) -> tuple[dict, float] | None:
        """The valid candidate with the highest mean GFLOPS among those `accept` allows (a
        session accepts only full-N trials: GFLOPS at a reduced N are not comparable)."""
        ok = [t for t in self.history if t.m.ok and not self.known_bad(t.cand) and (accept is None or accept(t.cand))]
        if not ok:
            return None
        cands = {key(t.cand): t.cand for t in ok}
        c = max(cands.values(), key=lambda c: self.mean(c))
        return c, self.mean(c)
