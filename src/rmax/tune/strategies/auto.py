"""auto: choose a strategy by the budget, in trials (a time budget is turned
into trials with the predicted trial time).

- few trials (< 12): model-guided, which spends them on the NB x grid pairs the
  time model ranks best (the two parameters that moved Kronos and I-Cluster most);
- a moderate budget (< 60): coordinate descent, which needs about 30 trials a round;
- many trials: Bayesian TPE, which learns interactions once it has data.
See bench/RESULTS.md, "Tuning strategies", for the measurements behind the cut-offs."""

from __future__ import annotations

from rmax.tune.strategies.base import STRATEGIES, Strategy, register

FEW, MANY = 12, 60


def choose(trials: float) -> str:
    if trials < FEW:
        return "model"
    if trials < MANY:
        return "coordinate"
    return "bayes"


@register
class Auto(Strategy):
    name = "auto"
    summary = f"model below {FEW} trials, coordinate below {MANY}, bayes above"

    def __init__(self, *args, trials_hint: float | None = None, **kw):
        super().__init__(*args, **kw)
        self.args, self.kw = args, kw
        self.trials_hint = trials_hint

    def search(self) -> None:
        left = self.trials_hint if self.trials_hint is not None else self.ev.budget.trials_left
        chosen = choose(left)
        self.notes.append(f"auto chose {chosen} for a budget of about {left:.0f} trials")
        inner = STRATEGIES[chosen](*self.args, **self.kw)
        try:
            inner.search()
        finally:
            self.incumbent = inner.incumbent
            self.notes.extend(inner.notes)
