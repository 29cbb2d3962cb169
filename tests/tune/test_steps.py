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
    ev = Evaluator(NbOnly(seed, cv), Budget(trials=400))
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
        assert x["n"] == SPACE.n_at(False) and x["statistic"] == f"mean of {x['trials']} run(s) in its block"
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


def test_the_confirmation_keeps_only_what_beat_the_stock_in_pairs_at_full_n():
    from rmax.tune.session import CONFIRM, CONFIRM_PAIRS, Session, run_statistic

    def session(better: float):
        ev = Evaluator(lambda c: Measurement(100.0 * (better if c["nb"] == 192 else 1.0), "ok", 1.0),
                       Budget(trials=40))
        s = Session.__new__(Session)
        s.ev, s.space = ev, SPACE
        stock = SPACE.sized(SPACE.stock(), True)
        ev.sample(stock)
        return s, stock, s.confirm(SPACE.sized({**stock, "nb": 192}, False), stock, 1.0)

    s, stock, got = session(1.1)
    assert got["chosen"]["nb"] == 192 and got["chosen"]["n"] == SPACE.n_at(True) and got["ratio"].better
    # One block at full N: stock, best, stock, ... stock; the figure is the best's runs there.
    assert [t.cand["nb"] for t in s.ev.history[1:]] == [128, 192] * CONFIRM_PAIRS + [128]
    assert got["runs"] == [100.0 * 1.1] * CONFIRM_PAIRS and len(got["stock_runs"]) == CONFIRM_PAIRS + 1
    assert s.ev.duels[-1].label == CONFIRM
    s, stock, got = session(1.0)              # no better than the stock: the stock is what is written
    assert got["chosen"] == stock and not got["ratio"]
    stat = run_statistic([9.0, 10.0, 11.0])
    assert stat["median"] == 10.0 and stat["interval"][0] < 9.0 and stat["interval"][1] > 11.0
