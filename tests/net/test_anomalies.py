"""The bandwidth-dip detector: more than 10% below both neighbours, nothing else."""

from rmax.bench.net import anomalies

SIZES = [2**k for k in range(4, 24)]


def smooth(sizes, alpha=1e-6, beta=10e9):
    return [s / (alpha + s / beta) for s in sizes]


def test_smooth_curve_has_no_anomaly():
    assert anomalies(SIZES, smooth(SIZES)) == []


def test_dip_is_flagged_with_its_depth():
    bw = smooth(SIZES)
    i = SIZES.index(32768)          # seed 05's dip near 31 KB
    bw[i] *= 0.7
    found = anomalies(SIZES, bw)
    assert [a["size"] for a in found] == [32768]
    # the depth is measured against the lower neighbour: the least the point fell
    assert found[0]["drop"] == 1 - bw[i] / min(bw[i - 1], bw[i + 1])
    assert found[0]["drop"] > 0.10


def test_shallow_dip_and_one_sided_step_are_not_flagged():
    bw = smooth(SIZES)
    bw[5] *= 0.95                    # 5%: noise, not an anomaly
    step = smooth(SIZES)
    for i in range(17, len(step)):   # the plateau falls to a lower one: below its left neighbour only
        step[i] *= 0.5
    assert anomalies(SIZES, bw) == []
    assert anomalies(SIZES, step) == []


def test_end_points_and_missing_values():
    bw = smooth(SIZES)
    bw[0] *= 0.1                     # no left neighbour: cannot be judged
    bw[-1] *= 0.1
    bw[7] = None
    assert anomalies(SIZES, bw) == []
    assert anomalies([8, 16, 24], [100.0, 50.0, 100.0])[0]["size"] == 16
