"""Coordinate descent, the way I-Cluster was tuned by hand (Richard et al., "I-Cluster:
Reaching TOP500 Performance Using Mainstream Hardware"): change one parameter at a
time, keep a value only when its gain is significant, and repeat rounds over all
parameters until a round brings no significant gain (parameters interact, so one
round is not enough). Searches at the reduced N; the session confirms at full N."""

from __future__ import annotations

from rmax.tune.noise import challenge
from rmax.tune.space import PARAMS, key
from rmax.tune.strategies.base import Strategy, register

MAX_ROUNDS = 4


def descend(strategy: Strategy, params=PARAMS, rounds: int = MAX_ROUNDS) -> int:
    """Rounds of one-parameter changes from strategy.incumbent; returns the rounds run."""
    ev, space = strategy.ev, strategy.space
    # Duels already decided are not fought again; an inconclusive one where the challenger
    # looked better, or one the machine's changes left undecided, is fought again in the next
    # round, in a new block with a higher cap on its pairs, so a real but small gain missed by
    # an unlucky draw gets another chance. A value that cannot change the run on the incumbent's
    # grid (rmax.tune.equivalence) is the incumbent itself once sized: never measured.
    tried: dict = {}
    for r in range(1, rounds + 1):
        improved = False
        for param in params:
            for value in space.values(param):
                inc = strategy.incumbent
                cand = strategy.sized({**inc, param: value})
                if key(cand) == key(inc):
                    continue
                pair = (key(inc), key(cand))
                if ev.known_bad(cand) or pair in tried and not tried[pair]:
                    continue
                v = challenge(ev, cand, inc, strategy.cap * r)
                tried[pair] = v.disturbed or (not v.better and not v.invalid and not v.worse
                                              and v.ratio is not None and v.ratio > 1)
                if v.better:
                    strategy.incumbent = cand
                    improved = True
                    strategy.log(f"round {r}: {param} -> {cand[param]} is better in pairs: {v.evidence()}")
        here = key(strategy.incumbent)      # promising but inconclusive duels of this incumbent, to retry
        pending = any(flag for (inc_key, _), flag in tried.items() if inc_key == here)
        if not improved and not pending:
            strategy.notes.append(f"converged: round {r} brought no significant gain")
            return r
    strategy.notes.append(f"stopped after {rounds} rounds")
    return rounds


@register
class Coordinate(Strategy):
    name = "coordinate"
    summary = "one parameter at a time at reduced N, rounds until no significant gain, then confirm at full N"

    def search(self) -> None:
        if self.measure_start() is None:
            return
        descend(self)
