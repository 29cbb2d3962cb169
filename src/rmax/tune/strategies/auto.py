"""auto: choose a strategy by the budget, in comparisons: blocks of paired trials
(rmax.tune.noise, at least BLOCK_RUNS trials each); a time budget is turned into trials with
the predicted trial time.

- few comparisons (< 12): model-guided, which spends them on the NB x grid pairs the
  time model ranks best (the two parameters that moved Kronos and I-Cluster most);
- a moderate budget (< 60): coordinate descent, which needs about 30 comparisons a round;
- many: Bayesian TPE, which learns interactions once it has data.
See bench/RESULTS.md, "Tuning strategies", for the measurements behind the cut-offs (made when a
comparison was one trial: the counts carry over to comparisons, the unit a strategy decides in)."""

from __future__ import annotations

from rmax.tune.noise import BLOCK_RUNS
from rmax.tune.strategies import bayes
from rmax.tune.strategies.base import STRATEGIES, Strategy, register

FEW, MANY = 12, 60


def choose(comparisons: float) -> str:
    if comparisons < FEW:
        return "model"
    if comparisons < MANY or not bayes.available():   # without optuna (an optional extra): coordinate
        return "coordinate"
    return "bayes"


@register
class Auto(Strategy):
    name = "auto"
    summary = f"model below {FEW} comparisons, coordinate below {MANY}, bayes above"

    def __init__(self, *args, trials_hint: float | None = None, **kw):
        super().__init__(*args, **kw)
        self.args, self.kw = args, kw
        self.trials_hint = trials_hint

    def search(self) -> None:
        trials = self.trials_hint if self.trials_hint is not None else self.ev.budget.trials_left
        left = trials / BLOCK_RUNS
        chosen = choose(left)
        self.notes.append(f"auto chose {chosen} for a budget of about {trials:.0f} trials: {left:.0f} comparisons "
                          f"of {BLOCK_RUNS} trials or more")
        inner = STRATEGIES[chosen](*self.args, **self.kw)
        try:
            inner.search()
        finally:
            self.incumbent = inner.incumbent
            self.notes.extend(inner.notes)
