"""The MTU experiment's verdicts: `rmax compare`'s rule (Welch over repeats, Holm over every test,
a minimum change), and the range of the repeats beside each median."""

from rmax.nic.mtu_results import Collector


def test_only_a_real_change_counts_and_the_median_shows_its_range():
    c = Collector([1500, 9000])
    for i in range(5):
        c.add(1500, ["a"], latency_us=10 + i * 0.1, bandwidth_MBps=100 + i)
        c.add(9000, ["b"], latency_us=10.05 + i * 0.1, bandwidth_MBps=200 + i)
    base, jumbo = c.rows()
    assert base["latency_us_range"] == [10.0, 10.4] and "vs_baseline" not in base
    vs = jumbo["vs_baseline"]
    assert vs["bandwidth_MBps"]["significant"] and vs["bandwidth_MBps"]["p_adjusted"] >= vs["bandwidth_MBps"]["p"]
    assert vs["latency_us"]["significant"] is False                 # 0.5 %: noise
    # a separable but tiny change (0.3 %) is below the minimum change: not significant
    t = Collector([1500, 9000])
    for i in range(5):
        t.add(1500, [], bandwidth_MBps=1000.0 + 0.01 * i)
        t.add(9000, [], bandwidth_MBps=1003.0 + 0.01 * i)
    d = t.rows()[1]["vs_baseline"]["bandwidth_MBps"]
    assert d["p_adjusted"] < 0.05 and d["significant"] is False
