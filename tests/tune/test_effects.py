"""What mattered: an effect is credited to a parameter only when the trials separate it."""

from rmax.tune.effects import effect_sizes

STOCK = {"n": 4096, "nb": 192, "grid": (1, 2), "depth": 1, "bcast": 1, "swap": 2, "swap_threshold": 64, "pfact": 2,
         "rfact": 2, "nbmin": 4, "ndiv": 2, "pmap": 0}


def test_two_configurations_that_differ_everywhere_credit_no_parameter():
    best = {**STOCK, "nb": 256, "depth": 0, "bcast": 3, "swap_threshold": 128, "pfact": 1, "rfact": 1}
    trials = [(STOCK, 68.7), (STOCK, 69.1), (best, 71.1), (best, 71.3)]
    assert effect_sizes(trials) == []


def test_a_parameter_changed_alone_is_credited_and_only_it():
    nb256 = {**STOCK, "nb": 256}
    trials = [(STOCK, 60.0), (nb256, 66.0), (STOCK, 60.4), (nb256, 66.2)]
    (e,) = effect_sizes(trials, noise_cv=0.01)
    assert e["param"] == "nb" and e["method"] == "one-at-a-time" and e["best_value"] == "256"
    assert abs(e["effect"] - (66.1 - 60.2) / 66.1) < 1e-9 and e["in_noise_units"] > 5


def test_marginal_means_need_a_design_that_separates_the_parameters():
    # A half-fraction of a 2^3 design: no two candidates differ in one parameter only, but each
    # parameter's values meet both values of every other one, so marginal means separate them.
    cands = [{**STOCK, "nb": nb, "depth": d, "bcast": b} for nb, d, b in
             ((128, 0, 1), (256, 1, 1), (128, 1, 3), (256, 0, 3))]
    trials = [(c, 60.0 + (6.0 if c["nb"] == 256 else 0.0) + (1.0 if c["depth"] == 1 else 0.0)) for c in cands]
    effects = {e["param"]: e for e in effect_sizes(trials)}
    assert set(effects) == {"nb", "depth", "bcast"}
    assert all(e["method"] == "marginal means" for e in effects.values())
    assert effects["nb"]["best_value"] == "256" and effects["nb"]["effect"] > effects["depth"]["effect"]
    assert effects["bcast"]["effect"] < 1e-9


def test_a_parameter_tried_at_one_value_of_another_is_not_credited():
    # grid 2x1 was only tried with NB 64 (a step that changed both), while 1x2 met NB 64 and 96: its
    # marginal mean carries NB's effect, and no two trials differ in the grid alone
    cands = [{**STOCK, "nb": 96}, {**STOCK, "nb": 64, "grid": (2, 1)}, {**STOCK, "nb": 96, "depth": 0},
             {**STOCK, "nb": 64, "depth": 0}]
    trials = [(c, 60.0 + (5.0 if c["nb"] == 96 else 0.0)) for c in cands]
    assert "grid" not in {e["param"] for e in effect_sizes(trials)}


def test_an_effect_counts_only_beyond_the_noise():
    nb256 = {**STOCK, "nb": 256}
    trials = [(STOCK, 60.0), (nb256, 66.0)]          # 9 % apart
    assert effect_sizes(trials, noise_cv=0.01)[0]["beyond_noise"] is True
    assert effect_sizes(trials, noise_cv=0.05)[0]["beyond_noise"] is False   # 2 trials at 5 % CV differ by 14 %
    assert effect_sizes(trials)[0]["beyond_noise"] is None                   # noise not measured: not judged
