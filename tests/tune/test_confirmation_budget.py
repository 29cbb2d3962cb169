"""The confirmation at full N always runs its block: releasing the reserve frees it from the trial
budget as from the time budget (a stock run outside its band takes one more run than the block
holds, and a `--trials 30` session once ended with "the budget ran out during the confirmation"),
and says what the budget had left for it (whether a runner-up fits, whether the block may run again)."""

from __future__ import annotations

from rmax.tune.evaluator import Budget
from rmax.tune.session import CONFIRM_PAIRS, CONFIRM_RUNS, Session


def test_release_frees_trials_and_seconds_and_reports_the_room():
    b = Budget(trials=30, seconds=100.0, used_trials=23, used_seconds=60.0, reserve_trials=CONFIRM_RUNS,
               reserve_seconds=30.0)
    assert b.trials_left == 0
    room, trials = Session.release(b)
    assert (room, trials) == (40.0, 7)
    # the block and its one-off runs never exhaust the budget now
    for _ in range(2 * (CONFIRM_RUNS + CONFIRM_PAIRS)):
        b.charge(10.0)
    assert not b.exhausted and b.trials_left > 0
