"""Repeats that fall into two states (the pair's CPUs changed place during the run) are named as
such, with each state's figure; scatter, one outlier or a single repeat is not two states."""

from rmax.families.net import Net
from rmax.stats import two_states

# One run of `rmax-net p2p --layers mpi --sizes 1,1048576 --one-buffer --repeats 20` on a 2-vCPU AMD EPYC
# guest: each repeat's median one-way time (us) at 1 B. The cache-line round trip between the two vCPUs
# flipped between about 60 and 300 ns in spells of seconds over the same minutes.
AMD_1B_US = [0.379, 0.371, 0.389, 0.395, 0.161, 0.15, 0.153, 0.16, 0.157, 0.154, 0.147, 0.143, 0.153, 0.389, 0.389,
             0.396, 0.443, 0.153, 0.148, 0.154]


def test_two_spells_are_two_states_with_their_own_medians():
    (fast, nf), (slow, ns) = two_states([v * 1e-6 for v in AMD_1B_US])
    assert (nf, ns) == (12, 8)
    assert abs(fast - 0.153e-6) < 1e-12 and abs(slow - 0.389e-6) < 1e-12


def test_scatter_outliers_and_too_few_repeats_are_not_two_states():
    assert two_states([1.0, 1.1, 1.25, 1.4, 1.6, 1.8, 2.0]) is None      # a spread, no gap wider than its sides
    assert two_states([1.0, 1.01, 0.99, 1.02, 3.0]) is None              # one preempted repeat
    assert two_states([1.0, 2.5]) is None                                 # one repeat a side
    assert two_states([1.0, 1.02, 1.3, 1.32]) is None                     # a gap of 1.27: within the scatter rule
    assert two_states([1.0, 1.02, None, float("nan"), 2.0, 2.04]) == ((1.01, 2), (2.02, 2))


def _records(repeats_us: list[float]) -> list[dict]:
    head = {"schema": "rmax.net/1", "record": "header", "test": "p2p", "ranks": 2, "hosts": ["a", "a"],
            "repeats": len(repeats_us), "layers": ["mpi"], "sizes": [1]}
    pts = [{"schema": "rmax.net/1", "record": "point", "layer": "mpi", "size": 1, "trial": i, "validated": True,
            "converged": True, "iters": 1000, "samples": [us * 1e-6],
            "summary": {"n": 1, "min": us * 1e-6, "median": us * 1e-6, "mean": us * 1e-6}}
           for i, us in enumerate(repeats_us)]
    return [head, *pts, {"schema": "rmax.net/1", "record": "done"}]


def test_the_net_view_and_headline_name_the_two_states():
    net = Net()
    s = net.parse(_records(AMD_1B_US)).summary
    (lat,) = [f for f in net.headline(s) if f.role == "mpi_latency"]
    assert "unstable: two states: 0.153 us (12 repeats) and 0.389 us (8)" in lat.statistic
    notes = " ".join(net.view(s).notes)
    assert "mpi 1 B: the repeats fall into two states" in notes and "oslat --tests cacheline" in notes
    steady = net.parse(_records([0.153, 0.154, 0.152, 0.155])).summary
    assert "two states" not in " ".join(net.view(steady).notes)
