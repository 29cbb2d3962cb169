"""The strategy interface and registry (the same pattern as launchers and
engines): a strategy is one class with a name; `search` spends the evaluator's
budget and leaves its best candidate in `self.incumbent`."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Callable, ClassVar

from rmax.errors import RmaxError
from rmax.registry import Registry
from rmax.tune.evaluator import BudgetExhausted, Evaluator
from rmax.tune.noise import DEFAULT_CAP
from rmax.tune.space import Space

STRATEGIES: Registry = Registry("tuning strategies")   # name -> Strategy class
register = STRATEGIES.register


def get_strategy(name: str) -> type["Strategy"]:
    if name not in STRATEGIES:
        raise RmaxError(f"unknown tuning strategy '{name}'", hint=f"one of: {', '.join(sorted(STRATEGIES))}")
    STRATEGIES[name].check_available()
    return STRATEGIES[name]


class Strategy(ABC):
    name: ClassVar[str]
    summary: ClassVar[str]

    @classmethod
    def check_available(cls) -> None:
        """Refuse (RmaxError) a strategy whose optional dependency is not installed."""

    def __init__(self, space: Space, ev: Evaluator, *, cap: int = DEFAULT_CAP, seed: int = 0,
                 full: bool = False, start: dict | None = None, log: Callable[[str], None] | None = None,
                 store=None):
        self.space, self.ev, self.cap, self.seed = space, ev, cap, seed
        self.full = full                      # search at full N (True) or at the reduced N
        self.start = dict(start or space.heuristic())
        self.log = log or (lambda msg: None)
        self.store = store                    # for strategies that read stored measurements (model)
        self.incumbent: dict | None = None
        self.notes: list[str] = []            # what the strategy decided and why, for the summary

    def sized(self, cand: dict) -> dict:
        return self.space.sized(cand, self.full)

    def run(self) -> dict | None:
        """Search until done or out of budget; the best candidate found (None if nothing was valid)."""
        try:
            self.search()
        except BudgetExhausted:
            self.notes.append("stopped: the budget ran out")
        return self.incumbent

    def measure_start(self) -> dict | None:
        """Measure the start (heuristic) candidate; if it is invalid, the stock one, then any other."""
        for c in (self.start, self.space.stock()):
            c = self.sized(c)
            if self.ev.known_bad(c):
                continue
            if self.ev.samples(c) or self.ev.sample(c) is not None:
                self.incumbent = c
                return c
        return None

    @abstractmethod
    def search(self) -> None:
        ...
