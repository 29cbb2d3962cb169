"""Cache-boundary detection on synthetic curves whose steps are known."""

import math

import numpy as np
import pytest

from rmax.model import cache_boundaries as cb

KiB, MiB = 1024, 2**20
SIZES = [int(KiB * 2 ** (i / 4)) for i in range(0, 4 * 20)]  # 1 KiB .. 1 GiB, 4 points per octave


def rate_curve(steps, levels, noise=0.03, seed=1):
    rng = np.random.default_rng(seed)
    out = []
    for s in SIZES:
        level = levels[sum(s > b for b in steps)]
        out.append(level * (1 + noise * rng.standard_normal()))
    return out


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_sharp_steps_in_a_rate_are_found(seed):
    steps = [48 * KiB, 2 * MiB, 32 * MiB]
    found = cb.boundaries(SIZES, rate_curve(steps, [10, 6, 3, 1.5], seed=seed))
    assert len(found) == 3
    for b, true in zip(found, steps):
        assert true / 1.3 <= b.bytes <= true * 1.3, (b.bytes, true)
        assert b.change < 1  # rates fall


def test_rising_latency_steps_and_plateau_levels():
    steps = [32 * KiB, 1 * MiB, 16 * MiB]
    lat = rate_curve(steps, [1.2, 4.5, 20, 90], noise=0.02)
    found = cb.boundaries(SIZES, lat, rising=True)
    assert [round(math.log2(b.bytes / t)) for b, t in zip(found, steps)] == [0, 0, 0]
    levels = [p.level for p in cb.plateaus(SIZES, lat, rising=True)]
    assert [round(x, 0) for x in levels] == [1, 4, 20, 90] or all(
        abs(a / b - 1) < 0.05 for a, b in zip(levels, [1.2, 4.5, 20, 90]))


def test_gradual_transition_is_placed_inside_it():
    # the rate falls smoothly over one octave after 2 MiB (a non-LRU cache)
    lat = []
    for s in SIZES:
        x = min(max(math.log2(s / (2 * MiB)), 0), 1)
        lat.append(10 * (1 - 0.6 * x))
    (b,) = cb.boundaries(SIZES, lat)
    assert 2 * MiB <= b.bytes <= 4 * MiB


def test_a_flat_noisy_curve_has_no_boundaries():
    assert cb.boundaries(SIZES, rate_curve([], [5.0], noise=0.05)) == []


def test_small_wiggles_are_not_boundaries():
    assert cb.boundaries(SIZES, rate_curve([64 * KiB], [10, 9.5], noise=0.01)) == []


def test_spread_peaks_between_boundaries():
    spread = [0.01] * len(SIZES)
    peak = SIZES.index(min(SIZES, key=lambda s: abs(s - 256 * KiB)))
    for d, v in ((-1, 0.05), (0, 0.12), (1, 0.06)):
        spread[peak + d] = v
    assert cb.spread_peaks(SIZES, spread) == [SIZES[peak]]
    assert cb.spread_peaks(SIZES, [0.02] * len(SIZES)) == []


def test_a_spread_peak_from_few_samples_must_be_significant():
    """An SD from 5 samples scatters by itself: 2.2 times the median spread is within that scatter
    (F-test, Bonferroni over the lengths), 5 times is not; with 40 samples 2.2 times is significant."""
    peak = SIZES.index(min(SIZES, key=lambda s: abs(s - 256 * KiB)))

    def curve(v):                   # a peak whose 3-point median is v, on a median spread of 0.01
        spread = [0.01] * len(SIZES)
        for d, f in ((-1, 0.8), (0, 1.1), (1, 1.0)):
            spread[peak + d] = f * v
        return spread

    five, forty = [5] * len(SIZES), [40] * len(SIZES)
    assert cb.spread_peaks(SIZES, curve(0.022)) == [SIZES[peak]]          # without counts: the factor alone
    assert cb.spread_peaks(SIZES, curve(0.022), five) == []
    assert cb.spread_peaks(SIZES, curve(0.05), five) == [SIZES[peak]]
    assert cb.spread_peaks(SIZES, curve(0.022), forty) == [SIZES[peak]]
    # a rise at either end of the sweep is no peak: nothing shows the spread falling again
    edges = [0.05, 0.05] + [0.01] * (len(SIZES) - 4) + [0.05, 0.05]
    assert cb.spread_peaks(SIZES, edges, forty) == []


def test_match_reports_ratios():
    m = cb.match([50 * KiB, 3 * MiB], {"L1d": 48 * KiB, "L2": 2 * MiB, "L3": 260 * MiB})
    assert m["L1d"]["detected_bytes"] == 50 * KiB and abs(m["L2"]["ratio"] - 1.5) < 1e-9
    assert m["L3"]["detected_bytes"] == 3 * MiB  # nearest, and its ratio shows how far


def samples_of(curve, sd, n=8, seed=5):
    """n samples per point around each value, with relative SD `sd`."""
    rng = np.random.default_rng(seed)
    return [list(v * (1 + sd * rng.standard_normal(n))) for v in curve]


def test_a_flat_curve_with_its_samples_says_no_boundary_found():
    flat = rate_curve([], [6.7], noise=0.02)
    levels, steps = cb.staircase(SIZES, flat, samples=samples_of(flat, 0.05))
    assert steps == [] and len(levels) == 1 and levels[0].points == len(SIZES)
    assert cb.describe(steps) == cb.NO_BOUNDARY == "no boundary found"


def test_a_staircase_with_its_samples_yields_its_boundaries():
    steps = [48 * KiB, 2 * MiB, 32 * MiB]
    curve = rate_curve(steps, [36, 23, 14, 6.5], noise=0.02)
    levels, found = cb.staircase(SIZES, curve, samples=samples_of(curve, 0.04))
    assert len(found) == 3 and len(levels) == 4
    assert all(true / 1.3 <= b.bytes <= true * 1.3 and b.p_value < cb.ALPHA and abs(b.after - b.before) > b.spread
               for b, true in zip(found, steps))
    assert cb.describe(found).startswith("boundaries at ")


def test_a_step_within_the_points_own_spread_is_not_a_boundary():
    # a 20% step passes the minimum relative step, but each point scatters by 30%: not significant
    curve = rate_curve([1 * MiB], [10, 8], noise=0.01)
    assert len(cb.boundaries(SIZES, curve)) == 1
    assert cb.staircase(SIZES, curve, samples=samples_of(curve, 0.3))[1] == []


def test_boundaries_line_up_with_reported_caches_only_when_near():
    steps = [cb.Boundary(60 * KiB, 1.4, 4.5, 3.2), cb.Boundary(2500 * KiB, 4.5, 35, 7.8),
             cb.Boundary(700 * MiB, 35, 160, 4.6)]
    assert cb.aligned(steps, {"L1d": 48 * KiB, "L2": 2 * MiB, "L3": 32 * MiB}) == {0: "L1d", 1: "L2"}
