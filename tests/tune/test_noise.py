"""Paired blocks: a verdict only from pairs of one block; the machine's changes set blocks aside."""

import random

from objective import Objective

from rmax.tune.evaluator import Budget, Evaluator, Measurement
from rmax.tune.noise import MIN_PAIRS, challenge
from rmax.tune.space import Space


def _setup(values: dict, cv: float, seed: int = 3, slow=lambda call: 1.0, fail=()):
    rng = random.Random(seed)
    calls = [0]

    def objective(c):
        calls[0] += 1
        if calls[0] in fail:
            return Measurement(None, "failed", 1.0)
        v = values[c["nb"]]
        if v is None:
            return Measurement(None, "invalid", 1.0)
        return Measurement(v * slow(calls[0]) * (1 + rng.gauss(0, cv)), "ok", 1.0)

    sp = Space(ranks=2, n_full=2000, n_reduced=2000, nb=[64, 128, 192])
    ev = Evaluator(objective, Budget(trials=200))
    inc = sp.sized({**sp.heuristic(), "nb": 64}, True)
    ev.sample(inc)
    return sp, ev, inc


def test_clear_gain_is_decided_in_pairs_of_one_block():
    sp, ev, inc = _setup({64: 10.0, 128: 12.0, 192: 10.0}, cv=0.01)
    before = len(ev.history)
    v = challenge(ev, sp.sized({**inc, "nb": 128}, True), inc, cap=5)
    assert v.better and v.samples == MIN_PAIRS and 1 < v.lo < 1.2 < v.hi < 1.3
    # The block: incumbent first and last, alternating: 3 pairs and the closing incumbent run.
    block = [t.cand["nb"] for t in ev.history[before:]]
    assert block == [64, 128, 64, 128, 64, 128, 64]
    d = ev.duels[-1]
    assert len(d.incumbent_runs) == 4 and len(d.challenger_runs) == 3 and d.block == (before + 1, before + 7)


def test_equal_candidates_are_rarely_kept_and_never_past_the_cap():
    false_gains = 0
    for seed in range(60):
        sp, ev, inc = _setup({64: 10.0, 128: 10.0, 192: 10.0}, cv=0.03, seed=seed)
        v = challenge(ev, sp.sized({**inc, "nb": 192}, True), inc, cap=4)
        false_gains += v.better
        assert v.samples <= 4 and v.lo is not None and (v.better or v.worse or v.lo <= 1 <= v.hi)
    assert false_gains <= 8              # a 95% interval looked at up to twice: a few percent


def test_a_worse_challenger_is_dropped_by_its_pairs_not_by_one_run():
    sp, ev, inc = _setup({64: 10.0, 128: 5.0, 192: 10.0}, cv=0.01)
    cand = sp.sized({**inc, "nb": 128}, True)
    v = challenge(ev, cand, inc, cap=5)
    assert v.worse and not v.better and len(ev.samples(cand)) == MIN_PAIRS and v.hi < 0.6


def test_invalid_trial_never_becomes_best():
    sp, ev, inc = _setup({64: 10.0, 128: None, 192: 10.0}, cv=0.01)
    cand = sp.sized({**inc, "nb": 128}, True)
    v = challenge(ev, cand, inc, cap=3)
    assert v.invalid and not v.better
    assert ev.known_bad(cand)


def test_a_failed_trial_runs_once_more_and_counts_only_when_it_fails_again():
    sp, ev, inc = _setup({64: 10.0, 128: 12.0, 192: 10.0}, cv=0.0, fail={2, 4, 5})
    cand = sp.sized({**inc, "nb": 128}, True)
    assert ev.sample(cand) is not None and ev.retried == 1 and not ev.known_bad(cand)   # call 2 failed, 3 ran
    other = sp.sized({**inc, "nb": 192}, True)
    assert ev.sample(other) is None and ev.known_bad(other)                             # calls 4 and 5 failed


def test_a_busy_spell_is_named_and_nothing_is_decided_on_its_runs():
    # Runs 10 to 15 are 40% slower (a busy core); 192 is as fast as the incumbent, 128 10% faster.
    busy = range(10, 16)
    sp, ev, inc = _setup({64: 10.0, 128: 11.0, 192: 10.0}, cv=0.005, slow=lambda c: 0.6 if c in busy else 1.0)
    same = challenge(ev, sp.sized({**inc, "nb": 192}, True), inc, cap=5)
    v = challenge(ev, sp.sized({**inc, "nb": 128}, True), inc, cap=5)
    assert not same.better and not same.worse and v.better and 1.05 < v.ratio < 1.15
    # Named: when it began (and when it ended: the machine changed back), and by how much.
    went, back = ev.monitor.changes
    assert went.trial in busy and went.change < -0.3 and busy[-1] < back.trial <= busy[-1] + 2 and back.change > 0.3
    assert "the machine changed at" in went.text() and f"(trial {went.trial})" in went.text()
    assert went.settled and went.retried[0]["nb"] == 192
    # The comparison it interrupted was run again: no verdict holds a run from the busy spell.
    decided = [d for d in ev.duels if d.verdict.decided]
    assert [d.challenger["nb"] for d in decided] == [192, 128]
    assert all(min(d.incumbent_runs + d.challenger_runs) > 9 for d in decided)
    assert all(d.block[0] > busy[-1] or d.block[1] < busy[0] for d in decided)


def test_one_stalled_incumbent_run_is_a_one_off_not_a_change():
    sp, ev, inc = _setup({64: 10.0, 128: 12.0, 192: 10.0}, cv=0.0, slow=lambda c: 0.2 if c == 4 else 1.0)
    v = challenge(ev, sp.sized({**inc, "nb": 128}, True), inc, cap=5)
    assert v.better and not ev.monitor.changes and ev.monitor.oneoffs == [4]
    assert min(ev.duels[-1].incumbent_runs) == 10.0           # the stalled run took no part


def test_objective_invalid_nb_excluded_from_strategies():
    from rmax.tune.strategies import STRATEGIES

    sp = Space(ranks=4, n_full=4000, n_reduced=4000, nb=[64, 128, 192, 256])
    for name in ("coordinate", "model", "bayes"):
        ev = Evaluator(Objective(cv=0.01, invalid={192}), Budget(trials=60))
        best = STRATEGIES[name](sp, ev, seed=0, full=True).run()
        assert best["nb"] != 192, name
