"""infer_groups against declared virtual-cluster layouts, on matrices simulated the way
`rmax bench matrix` measures a virtual cluster: a round-robin tournament of concurrent
pairs, each flow held to its tbf-shaped link and to its share of every trunk on its path
(trunks shared unevenly, round by round), the shared CPUs' noise, latency mostly noise,
and a few pairs not measured."""

from __future__ import annotations

import random
from collections import Counter, deque
from dataclasses import dataclass

import pytest

from rmax.topology.infer import infer_groups
from rmax.vcluster.plan import make_plan

CPU = 32e6          # bytes/s one pair gets from the shared CPUs: same-switch pairs measure 24-35 MB/s


@dataclass(frozen=True)
class Measured:
    """Noise fitted to matrices measured here (test_topology_measured.fit_noise): each pair's rate
    settles for its connection's life (a log-normal factor both directions share), each direction
    adds its own, each round of pairs measured at once shares one (the other work on the shared
    cores), and a pair's rate from the cores is `cpu` when `at_once` pairs measure at once."""
    pair_sd: float
    direction_sd: float
    round_sd: float
    cpu: float
    at_once: int


def simulate(switch_of: list[int], trunks: list[tuple[int, int, float]], link: float, *, seed: int,
             missing: float = 0.03, noise: tuple[float, float] | Measured = (0.75, 1.1)):
    """(latency s, bandwidth bytes/s) matrices; trunks: (bridge a, bridge b, bytes/s each way)."""
    rnd = random.Random(seed)
    fitted = noise if isinstance(noise, Measured) else None
    cpu = fitted.cpu if fitted else CPU
    n = len(switch_of)
    nbr: dict[int, list[tuple[int, float]]] = {}
    for a, b, rate in trunks:
        nbr.setdefault(a, []).append((b, rate))
        nbr.setdefault(b, []).append((a, rate))

    def path(s: int, t: int) -> list[tuple[int, int, float]]:
        back, todo = {s: None}, deque([s])
        while todo:
            u = todo.popleft()
            for v, rate in nbr.get(u, []):
                if v not in back:
                    back[v] = (u, rate)
                    todo.append(v)
        out = []
        while t != s:
            u, rate = back[t]
            out.append((u, t, rate))
            t = u
        return out

    paths = {(s, t): path(s, t) for s in set(switch_of) for t in set(switch_of)}
    lat = [[None] * n for _ in range(n)]
    bw = [[None] * n for _ in range(n)]
    m = n + n % 2
    for r in range(m - 1):                      # the circle method, as native/net/cmd_matrix.c
        pairs = [(m - 1 if k == 0 else (r + k) % (m - 1), r if k == 0 else (r - k + m - 1) % (m - 1))
                 for k in range(m // 2)]
        pairs = [(min(a, b), max(a, b)) for a, b in pairs if a < n and b < n]
        step = fitted.at_once if fitted and fitted.at_once else len(pairs) or 1
        for part in (pairs[k:k + step] for k in range(0, len(pairs), step)):    # --pairs-at-once
            shared = rnd.lognormvariate(0, fitted.round_sd) if fitted else 1.0
            settled = {p: rnd.lognormvariate(0, fitted.pair_sd) for p in part} if fitted else {}
            for flows in (part, [(b, a) for a, b in part]):   # lo sends, then hi sends
                load = Counter(e[:2] for s, t in flows for e in paths[switch_of[s], switch_of[t]])
                for s, t in flows:
                    rate = min([link, cpu] + [e[2] / load[e[:2]] for e in paths[switch_of[s], switch_of[t]]])
                    bw[s][t] = rate * (shared * settled[min(s, t), max(s, t)] *
                                       rnd.lognormvariate(0, fitted.direction_sd) if fitted else rnd.uniform(*noise))
        for a, b in pairs:
            hops = len(paths[switch_of[a], switch_of[b]])
            lat[a][b] = lat[b][a] = 30e-6 * (1 + 0.05 * hops) * rnd.lognormvariate(0, 0.25)
    for mat in (lat, bw):
        for i in range(n):
            for j in range(n):
                if i != j and rnd.random() < missing:
                    mat[i][j] = None
    return lat, bw


def from_plan(plan, seed: int, **kw):
    """Simulated matrices of a planned virtual cluster, with its host names."""
    return (*simulate([n.switch for n in plan.nodes], [(t.a, t.b, plan.trunk_rate / 8) for t in plan.trunks],
                      plan.link_rate / 8, seed=seed, **kw), [n.name for n in plan.nodes])


def alone_run(chosen: list[str], switch_of: list[int], hosts: list[str], trunks, link: float, seed: int = 9):
    """The deciding measurement: every pair of the chosen hosts, one pair at a time."""
    from rmax.topology.infer import Evidence

    sub = [switch_of[hosts.index(h)] for h in chosen]
    lat, bw = simulate(sub, trunks, link, seed=seed, missing=0.0, noise=Measured(0.1, 0.05, 0.0, CPU, 1))
    return Evidence(chosen, lat, bw, source="alone", alone=True)


def canon(levels):
    return [sorted(sorted(g) for g in level) for level in levels]


LAYOUTS = [  # (nodes, switches, trunks, sizes)
    (9, 3, "chain", None),
    (10, 3, "chain", [4, 3, 3]),
    (16, 4, "chain", None),
    (64, 8, "chain", None),
    (12, 3, "star", None),
    (10, 4, "mesh", [1, 3, 4, 2]),
]


# The simulated cases left undecided (their candidates and deciding hosts named): a mesh with a
# switch of one node and one of two (too few margins to judge them by), and a chain whose latency
# decided its two halves where its bandwidth decided the four switches.
UNDECIDED = {(16, "chain", 1), (10, "mesh", 1), (10, "mesh", 2)}


def assert_never_wrong(got, plan, hosts):
    """Exact, or undecided with what would decide it: never a wrong layout, never one switch."""
    assert got.answer in ("layout", "undecided"), got.note
    if got.answer == "layout":
        assert canon(got.levels) == canon(plan.tree()), got.note
        assert got.levels[0] == got.groups and got.levels[-1] == [hosts] and len(got.parents) == len(got.levels) - 1
    else:
        assert len(got.candidates) >= 2 and len(got.decide) >= 4 and got.pairs, got.note
        assert set(got.decide) <= set(hosts) and all(a in got.decide and b in got.decide for a, b in got.pairs)


@pytest.mark.parametrize("nodes,switches,trunks,sizes", LAYOUTS)
@pytest.mark.parametrize("seed", [1, 2])
def test_declared_layouts_exact_or_undecided(nodes, switches, trunks, sizes, seed):
    plan = make_plan("tp", nodes, switches, "10.213.9.0/24", trunk_kind=trunks, link_rate=10**9,
                     trunk_rate=10**8, sizes=sizes)
    lat, bw, hosts = from_plan(plan, seed)
    got = infer_groups(lat, bw, hosts)
    assert_never_wrong(got, plan, hosts)
    assert (got.answer == "undecided") == ((nodes, trunks, seed) in UNDECIDED), got.note
    if got.answer == "layout":
        assert got.decided_by == "bandwidth"


def test_spine_over_pods_gives_three_levels():
    # 4 leaf switches of 4 nodes; leaves 0, 1 under aggregation switch 4, leaves 2, 3 under 5;
    # 4 and 5 under spine 6, whose trunks are the narrower (an oversubscribed core).
    switch_of = [s for s in range(4) for _ in range(4)]
    trunks = [(0, 4, 12.5e6), (1, 4, 12.5e6), (2, 5, 12.5e6), (3, 5, 12.5e6), (4, 6, 4e6), (5, 6, 4e6)]
    hosts = [f"h{i}" for i in range(16)]
    lat, bw = simulate(switch_of, trunks, 125e6, seed=3)
    leaves = [hosts[4 * s:4 * s + 4] for s in range(4)]
    # the matrix measured its pairs at once: the pods are a candidate, open until measured alone
    got = infer_groups(lat, bw, hosts)
    assert got.answer == "undecided" and got.switches_decided, got.note
    assert [canon(c.above) for c in got.candidates] == [[], canon([[leaves[0] + leaves[1], leaves[2] + leaves[3]]])]
    assert got.decide == [h for g in leaves for h in g[:2]] and len(got.pairs) == 24
    got = infer_groups(lat, bw, hosts, evidence=[alone_run(got.decide, switch_of, hosts, trunks, 125e6)])
    assert canon(got.levels) == canon([leaves, [leaves[0] + leaves[1], leaves[2] + leaves[3]], [hosts]])
    pods = got.levels[1]
    for g, p in zip(got.levels[0], got.parents[0]):
        assert set(g) <= set(pods[p])
    assert "above them 2 groups" in got.note


@pytest.mark.parametrize("nodes", [9, 16, 40])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_one_switch_invents_nothing(nodes, seed):
    # one switch, or undecided between one switch and splits that the noise leaves open: never a layout
    plan = make_plan("tp", nodes, 1, "10.213.9.0/24", link_rate=10**9, trunk_rate=10**8)
    lat, bw, hosts = from_plan(plan, seed)
    got = infer_groups(lat, bw, hosts)
    assert got.answer in ("one switch", "undecided") and got.groups == [hosts] and got.decided_by is None, got.note
    if got.answer == "one switch":
        assert got.levels == [[hosts]] and "one switch" in got.note
    else:
        assert len(got.candidates[0].groups) == 1     # one switch is the first candidate


def test_noisier_cpus_never_wrong():
    # same-switch pairs anywhere from 16 to 35 MB/s, as on a busier host
    plan = make_plan("tp", 24, 3, "10.213.9.0/24", link_rate=10**9, trunk_rate=10**8)
    lat, bw, hosts = from_plan(plan, 4, noise=(0.5, 1.1))
    assert_never_wrong(infer_groups(lat, bw, hosts), plan, hosts)


def test_sampled_matrix_of_shifts():
    # The sampled design above ~64 nodes: only pairs (i, i + k) for a few shifts k are measured.
    plan = make_plan("tp", 96, 8, "10.213.9.0/24", link_rate=10**9, trunk_rate=10**8)
    lat, bw, hosts = from_plan(plan, 5, missing=0.0)
    n = len(hosts)
    shifts = {1, 2, 3, 5, 8, 13, 21, 34, 48}
    keep = {(i, (i + k) % n) for i in range(n) for k in shifts}
    for m in (lat, bw):
        for i in range(n):
            for j in range(n):
                if (i, j) not in keep and (j, i) not in keep:
                    m[i][j] = None
    got = infer_groups(None, bw, hosts)
    assert canon([got.groups]) == canon([plan.groups()]), got.note


def test_1024_nodes_in_seconds():
    rnd = random.Random(7)
    n, per = 1024, 32
    hosts = [f"h{i}" for i in range(n)]
    bw = [[None if i == j or rnd.random() < 0.2 else (30e6 if i // per == j // per else 6e6) * rnd.uniform(0.5, 1.5)
           for j in range(n)] for i in range(n)]
    got = infer_groups(None, bw, hosts)
    assert canon([got.groups]) == canon([[hosts[k:k + per] for k in range(0, n, per)]])


def test_a_schedule_does_not_make_a_level():
    # 48 nodes on a chain of 4 switches, sampled, pairs measured few at once: the round that held
    # the end switches' few pairs shared no trunk, so they measured 11 MB/s against 8 for
    # neighbours and 3.6 two switches apart (a real survey). Counted pair by pair that read as a
    # level grouping the two ends; as 6 switch pairs it is no level.
    rnd = random.Random(11)
    per, block = 12, {(0, 3): 11.3e6, (0, 1): 8.3e6, (1, 2): 8.4e6, (2, 3): 8.3e6, (0, 2): 3.7e6, (1, 3): 3.5e6}
    n = 4 * per
    hosts = [f"h{i}" for i in range(n)]
    bw = [[None] * n for _ in range(n)]
    for i in range(n):
        for j in range(i + 1, n):
            a, b = i // per, j // per
            if a == b:
                bw[i][j] = bw[j][i] = 19e6 * rnd.uniform(0.8, 1.2)
            elif rnd.random() < 0.07:      # about 10 pairs a switch pair, as the sampled design measured
                bw[i][j] = bw[j][i] = block[a, b] * rnd.uniform(0.85, 1.15)
    got = infer_groups(None, bw, hosts)
    assert canon([got.groups]) == canon([[hosts[k:k + per] for k in range(0, n, per)]]), got.note
    assert len(got.levels) == 2, got.levels[1:-1]      # the switches, then all hosts
