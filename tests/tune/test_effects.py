"""What mattered: only an effect measured in pairs, its interval excluding no change, is credited."""

from rmax.tune.effects import paired_effects, text
from rmax.tune.evaluator import Duel
from rmax.tune.noise import _verdict

STOCK = {"n": 4096, "nb": 192, "grid": (1, 2), "depth": 1, "bcast": 1, "swap": 2, "swap_threshold": 64, "pfact": 2,
         "rfact": 2, "nbmin": 4, "ndiv": 2, "pmap": 0}


def _duel(cand, inc_runs, cand_runs, inc=STOCK):
    return Duel(inc, cand, _verdict(inc_runs, cand_runs), len(inc_runs), "", inc_runs, cand_runs)


def test_a_parameter_changed_alone_is_credited_with_its_paired_interval():
    nb256 = {**STOCK, "nb": 256}
    (e,) = paired_effects([_duel(nb256, [60.0, 60.4, 59.8, 60.1], [66.0, 66.2, 65.9])])
    assert e["param"] == "nb" and e["beyond_noise"] and e["best_value"] == "256" and e["pairs"] == 3
    assert 0.09 < e["interval"][0] < e["effect"] < e["interval"][1] < 0.11
    assert text(e) == "nb 192 -> 256: +9.9% [+9.2%, +10.7%] (3 pairs at N 4096)"


def test_a_block_changing_several_parameters_or_left_undecided_credits_nothing():
    both = {**STOCK, "nb": 256, "depth": 0}
    undecided = _duel({**STOCK, "depth": 0}, [60.0, 60.0], [66.0])     # one pair: no interval
    assert paired_effects([_duel(both, [60.0, 60.4, 59.8, 60.1], [66.0, 66.2, 65.9]), undecided]) == []


def test_an_interval_holding_no_change_is_listed_but_not_credited():
    (e,) = paired_effects([_duel({**STOCK, "depth": 0}, [60.0, 61.0, 59.0, 60.0], [61.0, 59.5, 60.2])])
    assert e["param"] == "depth" and not e["beyond_noise"] and e["interval"][0] < 0 < e["interval"][1]
