"""The bandwidth-dip detector: more than 10% below both neighbours on the median
curve, and significantly so across repeats (Welch's t-test), nothing else."""

import numpy as np

from rmax.families.net import anomalies

SIZES = [2**k for k in range(4, 24)]
RNG = np.random.default_rng(5)


def smooth(sizes, alpha=1e-6, beta=10e9):
    return [s / (alpha + s / beta) for s in sizes]


def repeated(bw, n=3, noise=0.01):
    """n repeats of each point with 1% run-to-run noise."""
    return [None if b is None else list(b * (1 + noise * RNG.standard_normal(n))) for b in bw]


def test_smooth_curve_has_no_anomaly():
    assert anomalies(SIZES, repeated(smooth(SIZES))) == []


def test_dip_in_every_repeat_is_flagged_with_its_depth_and_test():
    bw = smooth(SIZES)
    i = SIZES.index(32768)          # a dip near 31 KB, as a TCP window hole makes
    bw[i] *= 0.7
    reps = repeated(bw)
    found = anomalies(SIZES, reps)
    assert [a.size for a in found] == [32768]
    med = [float(np.median(r)) for r in reps]
    # the depth is measured against the lower neighbour: the least the point fell
    assert found[0].drop == 1 - med[i] / min(med[i - 1], med[i + 1])
    assert found[0].drop > 0.10 and found[0].p_left < 0.05 and found[0].p_right < 0.05
    assert found[0].repeats == 3


def test_one_slow_repeat_or_one_run_is_not_a_dip():
    bw = smooth(SIZES)
    reps = repeated(bw)
    reps[9] = [reps[9][0] * 0.3, reps[9][1], reps[9][2]]     # a preemption in one repeat
    assert anomalies(SIZES, reps) == []
    dipped = list(bw)
    dipped[9] *= 0.5
    assert anomalies(SIZES, [[b] for b in dipped]) == []     # one repeat: nothing can be significant


def test_a_noisy_dip_that_is_not_significant_is_not_flagged():
    # the medians fall 50%, but the repeats scatter as much as the dip is deep
    reps = [[100.0, 40.0, 100.0], [50.0, 90.0, 30.0], [100.0, 100.0, 45.0]]
    assert anomalies([8, 16, 24], reps) == []
    assert anomalies([8, 16, 24], [[100.0, 101.0, 99.0], [50.0, 51.0, 49.0], [100.0, 99.0, 101.0]])[0].size == 16


def test_shallow_dip_and_one_sided_step_are_not_flagged():
    bw = smooth(SIZES)
    bw[5] *= 0.95                    # 5%: within the margin, however significant
    step = smooth(SIZES)
    for i in range(17, len(step)):   # the plateau falls to a lower one: below its left neighbour only
        step[i] *= 0.5
    assert anomalies(SIZES, repeated(bw, noise=0.001)) == []
    assert anomalies(SIZES, repeated(step)) == []


def test_end_points_and_missing_values():
    bw = smooth(SIZES)
    bw[0] *= 0.1                     # no left neighbour: cannot be judged
    bw[-1] *= 0.1
    bw[7] = None
    assert anomalies(SIZES, repeated(bw)) == []
