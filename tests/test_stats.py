"""rmax.stats' tests written out (not scipy.stats, whose import costs a CPU-second in every
command that calls them) give scipy's p-values: Mann-Whitney's exact and normal forms with ties,
Welch's t and the paired t."""

import math
import random

import pytest
from scipy import stats as st

from rmax.stats import differ_paired, differ_significantly, shifted


def _cases(seed: int, count: int):
    rng = random.Random(seed)
    for _ in range(count):
        n1, n2 = rng.randint(2, 14), rng.randint(2, 14)
        tied = rng.random() < 0.3           # small integers: ties, so the normal form with its correction
        draw = (lambda: float(rng.randint(0, 6))) if tied else (lambda: rng.gauss(0, 1))
        shift = rng.choice([0.0, 0.7, 2.0])
        yield [draw() + shift for _ in range(n1)], [draw() for _ in range(n2)]


@pytest.mark.parametrize("worse, alternative", [("lower", "less"), ("higher", "greater")])
def test_mann_whitney_is_scipys(worse, alternative):
    for a, b in _cases(1, 200):
        assert shifted(a, b, worse)[1] == pytest.approx(st.mannwhitneyu(a, b, alternative=alternative).pvalue,
                                                        rel=1e-9, abs=1e-12), (a, b)
    assert shifted([3.0] * 5, [3.0] * 7, "lower") == (False, 1.0)          # all tied: no evidence
    assert shifted([1.0, 2.0], [], "lower")[0] is False


@pytest.mark.filterwarnings("ignore:Precision loss")   # scipy, on nearly equal samples
def test_t_tests_are_scipys():
    for a, b in _cases(2, 150):
        if len(set(a)) > 1 or len(set(b)) > 1:
            assert differ_significantly(a, b)[1] == pytest.approx(st.ttest_ind(a, b, equal_var=False).pvalue,
                                                                  rel=1e-9)
        pos_a, pos_b = [abs(x) + 1 for x in a[:len(b)]], [abs(x) + 1 for x in b[:len(a)]]
        if len(pos_a) >= 2:
            logs = [math.log(x / y) for x, y in zip(pos_a, pos_b)]
            if max(logs) - min(logs) > 1e-9:
                assert differ_paired(pos_a, pos_b)[1] == pytest.approx(st.ttest_1samp(logs, 0.0).pvalue, rel=1e-9)


def test_the_median_interval_covers_as_the_sign_test_says_and_decides_a_band():
    from rmax.stats import band_verdict, median_interval

    assert all(math.isnan(v) for v in median_interval([1, 2, 3, 4, 5]))     # 5 values cover at most 94 %
    assert median_interval([6, 1, 5, 2, 4, 3]) == (1, 6)               # 6: the extremes, 97 %
    assert median_interval(range(30)) == (9, 20)                       # 30: the 10th and 21st, 95.7 %
    # coverage by simulation: the true median of a skewed distribution lies inside about 95 % of the time
    rng = random.Random(7)
    inside = sum(lo <= 1.0 <= hi for lo, hi in (median_interval([rng.lognormvariate(0, 1) for _ in range(25)])
                                                for _ in range(2000)))
    assert 0.94 <= inside / 2000 <= 0.99
    assert band_verdict(0.95, 1.05, 0.9, 1.1) == "within"
    assert band_verdict(1.12, 1.3, 0.9, 1.1) == "outside" and band_verdict(-30, -12, -10, 10) == "outside"
    assert band_verdict(0.85, 1.0, 0.9, 1.1) == "undecided"
    assert band_verdict(float("nan"), float("nan"), 0.9, 1.1) == "too few"
