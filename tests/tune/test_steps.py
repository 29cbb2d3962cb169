"""The steps table (Table 1 of the Kronos article) built from the duels a strategy decided."""

import random

from rmax.tune.evaluator import Budget, Evaluator, Measurement
from rmax.tune.space import Space
from rmax.tune.steps import build, render
from rmax.tune.strategies import STRATEGIES
from rmax.tune.strategies.coordinate import descend

SPACE = Space(ranks=4, n_full=4000, n_reduced=2000, nb=[64, 128, 192, 256])


class NbOnly:
    """Only NB matters (192 is 15% faster than any other); depth changes nothing. Noise-free by
    default: with noise, a t-test at 95% calls 1 in 20 no-effect duels significant, by design."""

    def __init__(self, seed: int = 3, cv: float = 0.0):
        self.rng, self.cv = random.Random(seed), cv

    def __call__(self, cand):
        g = 100.0 if cand["nb"] == 192 else 85.0
        return Measurement(g * (1 + self.rng.gauss(0, self.cv)), "ok", 1.0)


def _session(seed, cv=0.0):
    ev = Evaluator(NbOnly(seed, cv), Budget(trials=200))
    stock = SPACE.sized(SPACE.stock(), False)
    ev.sample(stock)
    s = STRATEGIES["coordinate"](SPACE, ev, start={**SPACE.heuristic(), "nb": 64})
    s.measure_start()
    descend(s, params=["nb", "depth"])
    return build(ev, stock), s


def test_a_better_parameter_is_a_kept_significant_step_and_a_useless_one_is_not_kept():
    steps, s = _session(0)
    assert steps[0]["change"] == "stock HPL.dat (the start)" and steps[0]["kept"]
    # The strategy started from NB 64 (not the stock's 128): a row says so, compared with nothing.
    assert steps[1]["change"].startswith("search starts here") and steps[1]["gain_pct"] is None
    nb = [x for x in steps if x["change"].startswith("nb: ") and x["change"].endswith("-> 192")]
    assert nb and nb[-1]["kept"] and nb[-1]["significant"] and nb[-1]["gain_pct"] > 10, steps
    depth = [x for x in steps if x["change"].startswith("depth: ")]
    assert depth and not any(x["kept"] for x in depth), steps
    assert all(x["significant"] for x in steps if x["kept"] and x["index"] > 1)
    assert s.incumbent["nb"] == 192
    # Every compared row is at the N of what it was compared with, and says how many trials it averages.
    for x in steps[2:]:
        assert x["n"] == SPACE.n_at(False) and x["statistic"] == f"mean of {x['trials']} trial(s)"
    lines = render(steps)
    assert lines[0].split()[:3] == ["Step", "Change", "N"] and len(lines) == len(steps) + 1


def test_with_noise_the_better_nb_is_still_found_significant():
    for seed in range(3):
        steps, s = _session(seed, cv=0.02)
        nb = [x for x in steps if x["change"].endswith("-> 192") and x["kept"]]
        assert nb and all(x["significant"] and x["p_value"] < 0.05 for x in nb), steps


def test_a_duel_the_budget_cut_short_is_shown_undecided_and_not_kept():
    import pytest

    from rmax.tune.evaluator import BudgetExhausted
    from rmax.tune.noise import challenge

    ev = Evaluator(NbOnly(), Budget(trials=3))
    stock = SPACE.sized(SPACE.stock(), True)
    ev.sample(stock)
    with pytest.raises(BudgetExhausted):
        challenge(ev, {**stock, "nb": 192}, stock, label="the best at full N vs the stock HPL.dat")
    steps = build(ev, stock)
    assert len(steps) == 2 and steps[1]["change"] == "the best at full N vs the stock HPL.dat: nb: 128 -> 192"
    assert steps[1]["kept"] is False and steps[1]["why"].startswith("undecided") and steps[1]["trials"] == 1
    assert round(steps[1]["gain_pct"], 6) == round(100 * (100 / 85 - 1), 6)


def test_the_session_ends_with_what_its_steps_kept_not_a_lucky_higher_mean():
    from rmax.tune.session import Session

    runs = {128: iter([100.0, 101.0, 99.0]), 192: iter([104.0])}
    ev = Evaluator(lambda c: Measurement(next(runs[c["nb"]]), "ok", 1.0), Budget(trials=10))
    stock = SPACE.sized(SPACE.stock(), True)
    lucky = {**stock, "nb": 192}
    for c in (stock, stock, stock, lucky):
        ev.sample(c)
    s = Session.__new__(Session)
    s.ev, s.space, s.chosen = ev, SPACE, stock     # the confirmation did not keep the challenger
    assert ev.best(s.at_full_n)[0]["nb"] == 192     # the higher mean, from one trial
    assert s.kept_best() == (stock, 100.0)
    s.chosen = None                                  # the search stopped before deciding: best trial
    assert s.kept_best()[0]["nb"] == 192
