"""Bayesian optimisation with optuna's TPE sampler, driven by ask/tell so every
trial goes through the same evaluator (budget, storage, noise) as the other
strategies. The study is seeded with the heuristic configuration (enqueued as
its first trial) and with a fixed sampler seed, so a resumed session replays
the same suggestions. A suggestion that beats the incumbent must survive the
noise duel (rmax.tune.noise) before it becomes the incumbent."""

from __future__ import annotations

import importlib.util

from rmax.errors import RmaxError
from rmax.tune.noise import challenge
from rmax.tune.space import PARAMS, grid_text, parse_grid_text
from rmax.tune.strategies.base import Strategy, register

EXTRA = "rmax[bayes]"     # optuna is an optional dependency: pyproject.toml's `bayes` extra


def available() -> bool:
    """Whether optuna is installed (found, not imported: its import costs a second)."""
    try:
        return importlib.util.find_spec("optuna") is not None
    except ImportError:    # a finder that refuses it (a broken install)
        return False


MAX_DUPLICATES = 40      # TPE re-suggests measured points once it has converged: then stop


@register
class Bayes(Strategy):
    name = "bayes"
    summary = "optuna TPE (ask/tell) seeded with the heuristic configuration"

    @classmethod
    def check_available(cls) -> None:
        if not available():
            raise RmaxError("--strategy bayes needs optuna, which is not installed",
                            hint=f"pip install '{EXTRA}' (or optuna), or choose --strategy coordinate or model")

    def encode(self, cand: dict) -> dict:
        return {p: grid_text(cand[p]) if p == "grid" else cand[p] for p in PARAMS}

    def search(self) -> None:
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        sampler = optuna.samplers.TPESampler(seed=self.seed, n_startup_trials=8, multivariate=True)
        study = optuna.create_study(direction="maximize", sampler=sampler)
        study.enqueue_trial(self.encode(self.start))
        choices = {p: [grid_text(g) for g in self.space.grid] if p == "grid" else self.space.values(p)
                   for p in PARAMS}
        duplicates = 0
        while duplicates < MAX_DUPLICATES:
            t = study.ask()
            raw = {p: t.suggest_categorical(p, choices[p]) for p in PARAMS}
            raw["grid"] = parse_grid_text(raw["grid"])
            cand = self.sized(raw)
            if self.ev.known_bad(cand):
                study.tell(t, state=optuna.trial.TrialState.FAIL)
                duplicates += 1
                continue
            if self.ev.samples(cand):
                study.tell(t, self.ev.mean(cand))     # known already: costs no trial
                duplicates += 1
                continue
            duplicates = 0
            if self.incumbent is None:
                g = self.ev.sample(cand)
                if g is None:
                    study.tell(t, state=optuna.trial.TrialState.FAIL)
                    continue
                self.incumbent = cand
                study.tell(t, g)
                continue
            inc = self.incumbent
            v = challenge(self.ev, cand, inc, self.cap)
            if v.invalid or v.ratio is None:      # failed, or the machine kept changing: nothing learnt
                study.tell(t, state=optuna.trial.TrialState.FAIL)
                continue
            if v.better:
                self.incumbent = cand
            # The challenger's rate on the incumbent's scale: its paired ratio, not its block's mean.
            study.tell(t, self.ev.mean(inc) * v.ratio)
        self.notes.append(f"TPE stopped after {MAX_DUPLICATES} suggestions in a row were already measured")
