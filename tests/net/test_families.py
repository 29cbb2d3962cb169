"""coll, ring, bisect and matrix: each stores a run with 2 ranks and with 4
oversubscribed ranks, validates its messages, and refuses bad input."""

import json
import math
import os

import pytest
from cliutil import assert_one_line_error, run_cli
from netutil import MPICH_TWO, mpirun, records

from rmax.families import coll, matrix, ring
from rmax.families import get
from rmax.store import open_store

RANKS = [pytest.param(["--np", "2"], id="2"), pytest.param(["--np", "4", "--oversubscribe"], id="4"), MPICH_TWO]


def typed(family: str, rec: dict):
    """The typed summary of a run printed by --json."""
    return get(family).Summary.load(rec["summary"])


def bench(db, family: str, *args: str) -> dict:
    proc = run_cli("bench", family, "--quick", *args, "--json", timeout=120)
    assert proc.returncode == 0, proc.stderr
    rec = json.loads(proc.stdout)
    assert rec["kind"] == family and rec["status"] == "ok", rec.get("error")
    with open_store(db) as store:
        assert store.get(rec["id"]).status == "ok"
    if "--mpi" in args:   # MPICH's build under MPICH's launcher, and the run says so
        assert rec["environment"]["mpi"]["implementation"] == "MPICH"
        assert any(a.endswith("/mpiexec.mpich") for a in rec["argv"]) and any(a.endswith("/rmax-net.mpich")
                                                                             for a in rec["argv"])
    return rec


@pytest.mark.parametrize("ranks", RANKS)
def test_coll(db, ranks):
    rec = bench(db, "coll", "--budget", "0.002", *ranks)
    np_ = int(ranks[1])
    s = typed("coll", rec)
    pts = s.points
    assert {p.op for p in pts} == set(coll.DEFAULT_OPS)
    assert {p.order for p in pts} == set(coll.DEFAULT_ORDERS)
    assert sorted({p.procs for p in pts}) == ([2] if np_ == 2 else [2, 4])
    for p in pts:
        assert p.validated and p.min <= p.avg * 1.0001 and p.avg <= p.max * 1.0001, p
        assert sorted(p.rank_order) == list(range(p.procs))
    rev = next(p for p in pts if p.procs == np_ and p.order == "reversed")
    assert rev.rank_order == ([0, 1] if np_ == 2 else [0, 1, 3, 2])   # second half reversed
    assert len(rec["samples"]) == len(pts)
    view = get("coll").view(s)
    assert len(view.tables[0].rows) == len(pts) == len(view.data["collectives"])
    assert {f.better for f in get("coll").metrics(s)} == {"lower"}


@pytest.mark.parametrize("ranks", RANKS)
def test_ring(db, ranks):
    rec = bench(db, "ring", "--budget", "0.002", *ranks)
    s = typed("ring", rec)
    np_ = int(ranks[1])
    assert 0 < s.natural_latency <= s.natural_latency_median
    assert s.natural_bandwidth > 0 and s.random_latency > 0 and s.random_bandwidth > 0
    assert len(s.rings) == 1 + 3                      # natural + quick's three random rings
    assert sorted(s.rings[1].ring) == list(range(np_))
    assert [(link.from_rank, link.to_rank) for link in s.links if link.size == 8] == \
        [(i, (i + 1) % np_) for i in range(np_)]
    assert all(link.validated and link.time > 0 for link in s.links)
    assert {f.key: f.value for f in get("ring").metrics(s)}["natural.latency"] == s.natural_latency * 1e6


@pytest.mark.parametrize("ranks", RANKS)
def test_a_sweep_budget_used_up_keeps_what_was_measured_and_the_run_is_partial(db, ranks):
    """--sweep-budget (a survey step's share, with a margin): past it the points not yet measured
    are left out on every rank at once, named, and the run is partial with what it measured."""
    for family, args, said in (("coll", ["--sweep-budget", "0.05"], "the points from "),
                               ("ring", ["--random-rings", "20", "--sweep-budget", "0.05"], "the random rings from")):
        proc = run_cli("bench", family, "--quick", "--budget", "0.002", *args, *ranks, "--json", timeout=120)
        rec = json.loads(proc.stdout)
        assert proc.returncode != 0 and rec["status"] == "partial", (family, rec.get("error"))
        assert f"sweep budget (0.05 s) used up: {said}" in rec["error"], rec["error"]
        s = typed(family, rec)
        assert s.cut and s.cut in rec["error"]
        if family == "coll":
            sized = len(coll.DEFAULT_OPS) - 1    # barrier has no size; quick's two sizes for the others
            full = (2 * sized + 1) * len(coll.DEFAULT_ORDERS) * (1 if int(ranks[1]) == 2 else 2)
            assert 0 < len(s.points) < full and all(p.validated for p in s.points)
        else:
            assert s.natural_latency > 0 and 1 <= len(s.rings) < 21 and not s.links
        assert any("sweep budget used up" in n for n in get(family).view(s).notes)


def test_ring_geometric_mean():
    assert ring.geomean([1e-6, 4e-6]) == pytest.approx(2e-6)
    assert ring.geomean([]) is None


@pytest.mark.parametrize("ranks", RANKS)
def test_bisect(db, ranks):
    rec = bench(db, "bisect", "--budget", "0.003", *ranks)
    s = typed("bisect", rec)
    np_ = int(ranks[1])
    assert len(s.bisections) == 3
    for c in s.bisections:
        assert len(c.pairs) == np_ // 2 and c.validated and c.bandwidth > 0
        ends = [r for p in c.pairs for r in (p.from_rank, p.to_rank)]
        assert sorted(ends) == list(range(np_))          # every rank on exactly one side
    assert s.bandwidth_min <= s.bandwidth_median
    assert s.groups is None and s.groups_source                 # none known here, and why
    assert rec["params"]["groups"] is None and rec["params"]["groups_source"] == s.groups_source


@pytest.mark.parametrize("ranks", RANKS)
def test_matrix(db, ranks):
    rec = bench(db, "matrix", *ranks)
    s = typed("matrix", rec)
    np_ = int(ranks[1])
    assert s.rounds == np_ - 1
    lat, bw = s.latency, s.bandwidth
    for i in range(np_):
        assert lat[i][i] is None and bw[i][i] is None
        for j in range(np_):
            if i != j:
                assert lat[i][j] == lat[j][i] and lat[i][j] > 0 and bw[i][j] > 0
    assert s.labels == [f"{h}:{r}" for r, h in enumerate(s.hosts)]   # one host: host:rank
    assert s.classes.startswith("all pairs")                            # no switch groups here
    for sus in s.suspects:
        assert sus.kind in ("latency", "bandwidth") and len(sus.alone) == 3 and min(sus.alone) > 0
        # untested: no other pair of its class to compare with (2 ranks)
        assert sus.verdict in ("flagged", "contention", "untested", "slow alone, not significant", "CPU shared")
        assert len(sus.alone_cpu_shared) == 3
        assert sus.flagged == (sus.verdict == "flagged")
    # each rank reduces its samples to numbers per pair: the best sample is kept beside the median
    best = rec["samples"]
    for i in range(np_):
        assert best["latency_best"][i][i] is None and best["bandwidth_best"][i][i] is None
        for j in range(np_):
            if i != j:
                assert 0 < best["latency_best"][i][j] <= lat[i][j]
                assert best["bandwidth_best"][i][j] >= bw[i][j] > 0
    assert s.design == "full" and s.pairs == s.pairs_total == np_ * (np_ - 1) // 2
    assert s.retest_status == "done" and {c.kind for c in s.class_stats} == {"latency", "bandwidth"}
    # sized for the cores its ranks crowd, as the survey's plan would (matrix.crowded_sizes)
    cores = len(os.sched_getaffinity(0))
    crowded = np_ > cores
    assert s.pairs_at_once == (matrix.PAIRS_PER_CORE * cores if crowded else 0) == rec["params"]["pairs_at_once"]
    assert s.bw_size == (matrix.CROWDED_BW_SIZE if crowded else 256 << 10) == rec["params"]["bw_size"]
    assert s.sizing.startswith(f"pairs at once {s.pairs_at_once or 'every pair'}") and s.sizing in get("matrix").view(s).notes


def test_matrix_keeps_the_sizes_the_user_set(db):
    rec = bench(db, "matrix", "--np", "4", "--oversubscribe", "--bw-size", "128K", "--pairs-at-once", "0")
    s = typed("matrix", rec)
    assert s.bw_size == 128 << 10 and s.pairs_at_once == 0
    assert "set by the user: pairs-at-once, bw-size" in s.sizing, s.sizing


@pytest.mark.parametrize("np_,at_once,rounds", [(3, 0, 3), (4, 1, 6)])
def test_matrix_covers_every_pair_with_odd_ranks_and_few_pairs_at_once(np_, at_once, rounds):
    # 3 ranks: one sits out each round; 4 ranks one pair at a time: each round of 2 pairs split in two
    proc = mpirun(np_, "matrix", "--json", "-", "--budget", "0.002", "--max-samples", "5", "--bw-size", "64K",
                  "--pairs-at-once", str(at_once))
    assert proc.returncode == 0, proc.stderr
    parsed = get("matrix").parse(records(proc))
    assert parsed.status == "ok" and parsed.summary.rounds == rounds and parsed.summary.pairs == np_ * (np_ - 1) // 2
    lat = parsed.summary.latency
    assert all(lat[i][j] > 0 for i in range(np_) for j in range(np_) if i != j)
    assert all(not math.isnan(v) for row in parsed.summary.bandwidth for v in row if v is not None)


@pytest.mark.parametrize("family", ["coll", "ring", "bisect", "matrix"])
def test_one_rank_is_refused(db, family):
    assert_one_line_error(run_cli("bench", family, "--np", "1"), 2, "at least 2 ranks")


def test_bad_input(db):
    assert_one_line_error(run_cli("bench", "coll", "--np", "2", "--procs", "2,8"), 2, "more than the 2 ranks")
    assert_one_line_error(run_cli("bench", "coll", "--np", "2", "--ops", "bcast,gossip"), 2, "gossip")
    assert_one_line_error(run_cli("bench", "ring", "--np", "2", "--bw-size", "20G"), 2, "1 GiB")
    assert_one_line_error(run_cli("bench", "bisect", "--np", "2", "--size", "5G"), 2, "1 GiB")
    assert_one_line_error(run_cli("bench", "matrix", "--np", "4"), 2, "slots")   # 4 ranks on 2 cores, no flag


def test_matrix_flags_by_class_and_significance():
    # 4 ranks on 2 switches; the trunk pairs are all slow (the topology), 0->1 is slow alone too
    hosts, group_of = ["a", "b", "c", "d"], [0, 0, 1, 1]
    bw = [[None, 20.0, 5.0, 5.1], [100.0, None, 5.2, 4.9], [5.0, 5.1, None, 101.0], [4.8, 5.0, 99.0, None]]
    lat = [[None if i == j else 1.0 for j in range(4)] for i in range(4)]
    recs = [{"schema": matrix.SCHEMA, "record": "header", "hosts": hosts, "ranks": 4, "rounds": 3, "retests": 3,
             "classes": True, "group_of": group_of},
            {"schema": matrix.SCHEMA, "record": "matrix", "latency": lat, "bandwidth": bw, "validated": True,
             "suspects": [
                 {"from": 0, "to": 1, "kind": "bandwidth", "class": "same", "concurrent": 20.0,
                  "alone": [21.0, 19.5, 20.5]},
                 {"from": 1, "to": 3, "kind": "bandwidth", "class": "across", "concurrent": 4.9,
                  "alone": [5.1, 5.0, 4.95]}]},
            {"schema": matrix.SCHEMA, "record": "done"}]
    s = get("matrix").parse(recs).summary
    first, trunk = s.suspects
    assert first.flagged and first.from_host == "a" and first.to_host == "b" and first.p < 0.05
    assert first.class_median == 100.0                    # its class: 1->0, 2->3, 3->2
    assert not trunk.flagged and trunk.verdict == "contention"   # a trunk pair like the other trunk pairs
    assert [f.from_rank for f in s.flagged] == [0] and s.labels == hosts
    assert any(n.startswith("flagged: bandwidth from a to b") for n in get("matrix").view(s).notes)
    # without switch groups every trunk pair is far from the median: still not flagged without a t-test
    assert matrix.suspect_verdict({"kind": "bandwidth", "alone": [5.0]}, [100.0, 99.0])["verdict"] == "untested"
    noisy = matrix.suspect_verdict({"kind": "bandwidth", "alone": [50.0, 95.0, 20.0]}, [100.0, 101.0, 99.0])
    assert noisy["verdict"] == "slow alone, not significant" and not noisy["flagged"] and noisy["p"] > 0.05
    slow_latency = matrix.suspect_verdict({"kind": "latency", "alone": [9e-6, 9.2e-6, 8.9e-6]}, [2e-6, 2.1e-6, 1.9e-6])
    assert slow_latency["flagged"]


def test_matrix_suspects_are_judged_against_a_control_measured_alone_at_the_same_time():
    """The failure seen on a 2-vCPU guest: a same-switch pair measured 33-34 MB/s alone against a class
    median of 45 MB/s from the concurrent rounds (p 0.0006), because the host had slowed in between.
    A control of the class measured alone in turn with it was slowed too: not flagged. A pair slow
    against a control that is not, is."""
    drifted = matrix.suspect_verdict({"kind": "bandwidth", "alone": [34.4e6, 34.0e6, 32.6e6],
                              "control": [34.9e6, 33.1e6, 33.8e6]}, [44.8e6, 45.1e6, 44.2e6])
    assert not drifted["flagged"] and drifted["verdict"] == "contention" and drifted["control_median"] == 33.8e6
    slow = matrix.suspect_verdict({"kind": "bandwidth", "alone": [10.2e6, 10.0e6, 10.4e6],
                           "control": [44.0e6, 45.3e6, 44.9e6]}, [44.8e6, 45.1e6, 44.2e6])
    assert slow["flagged"] and slow["p"] < 0.05
    # 1.2 MB/s against a control spread over 30-85 MB/s: Welch on the values says p = 0.07, on their
    # logarithms (rates are ratios) p < 0.01
    shaped = matrix.suspect_verdict({"kind": "bandwidth", "alone": [1.19e6, 1.19e6, 1.191e6],
                             "control": [30e6, 85e6, 80e6]}, [44.8e6, 45.1e6, 44.2e6])
    assert shaped["flagged"] and shaped["p"] < 0.01
    # one control value is no reference: the class's concurrent values stand in, as without a control
    assert matrix.suspect_verdict({"kind": "bandwidth", "alone": [34.4e6, 34.0e6, 32.6e6], "control": [33e6]},
                          [44.8e6, 45.1e6, 44.2e6])["flagged"]


def test_matrix_alone_values_taken_on_one_cpu_are_left_out():
    """Two ranks of one kernel woken on one CPU (4 virtual nodes on 2 vCPUs) measure that CPU: 27 MB/s
    both ways, alone, against a control at 42 MB/s, on an unshaped virtual cluster. Not flagged."""
    mb = 1e6
    shared = matrix.suspect_verdict({"kind": "bandwidth", "alone": [27 * mb, 27.5 * mb, 26.8 * mb],
                             "alone_cpu_shared": [1, 1, 0], "control": [42 * mb, 41.5 * mb, 42.2 * mb],
                             "control_cpu_shared": [0, 0, 0]}, [44.8 * mb, 45.1 * mb])
    assert shared["verdict"] == "CPU shared" and not shared["flagged"]
    # the same values measured on separate CPUs are a slow pair
    assert matrix.suspect_verdict({"kind": "bandwidth", "alone": [27 * mb, 27.5 * mb, 26.8 * mb],
                           "alone_cpu_shared": [0, 0, 0], "control": [42 * mb, 41.5 * mb, 42.2 * mb]},
                          [44.8 * mb, 45.1 * mb])["flagged"]
    # one shared value of three: the other two are tested; the control's shared value is left out too
    slow = matrix.suspect_verdict({"kind": "bandwidth", "alone": [5 * mb, 27 * mb, 5.1 * mb], "alone_cpu_shared": [0, 1, 0],
                           "control": [42 * mb, 10 * mb, 42.2 * mb, 41.9 * mb],
                           "control_cpu_shared": [0, 1, 0, 0]}, [44.8 * mb])
    assert slow["flagged"] and slow["alone_median"] == 5.05 * mb and slow["control_median"] == 42 * mb


@pytest.mark.parametrize("affinity", ["one CPU", "a core each"])
def test_matrix_sees_when_a_pairs_ranks_share_a_cpu(affinity):
    """rmax-net matrix marks the pairs whose two ranks ran on one CPU of one kernel: all of them
    when the ranks may use only one CPU, none when each rank is bound to a core of its own."""
    import os

    if affinity == "a core each" and len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs 2 CPUs")
    one = affinity == "one CPU"
    proc = mpirun(2, "matrix", "--json", "-", "--budget", "0.002", "--max-samples", "5", "--bw-size", "64K",
                  cpus=1 if one else None, mpi_args=("--bind-to", "none" if one else "core"))
    assert proc.returncode == 0, proc.stderr
    rec = next(r for r in records(proc) if r.get("record") == "matrix")
    assert rec["cpu_shared"] == ([[0, 1], [1, 0]] if one else [[0, 0], [0, 0]])


def test_matrix_measures_a_control_for_each_suspect(db):
    """4 ranks in one class: every suspect gets a control pair that is no suspect, measured alone as
    often. The last rank is slowed (--self-test-slow-last), so that there are suspects whatever the
    noise: its pairs, each with a control among the pairs of the other three ranks."""
    proc = mpirun(4, "matrix", "--json", "-", "--budget", "0.002", "--max-samples", "5", "--bw-size", "64K",
                  "--retests", "2", "--retest-budget", "3600", "--self-test-slow-last", timeout=600)
    assert proc.returncode == 0, proc.stderr
    recs = records(proc)
    rec = next(r for r in recs if r.get("record") == "matrix")
    assert any(3 in (x["from"], x["to"]) and "control_from" in x for x in rec["suspects"]), rec["suspects"]
    retested = {x["suspect"]: x for r in recs if r.get("record") == "retests" for x in r["suspects"]}
    assert sorted(retested) == list(range(len(rec["suspects"])))     # every suspect, within the budget
    for k, sus in enumerate(rec["suspects"]):
        if "control_from" not in sus:
            # no pair of its kind shares no rank with it and is no suspect: it is retested alone
            others = {(x["from"], x["to"]) for x in rec["suspects"] if x["kind"] == sus["kind"]}
            disjoint = [(a, b) for a in range(4) for b in range(4) if a != b and not {a, b} & {sus["from"], sus["to"]}]
            assert all(p in others or p[::-1] in others for p in disjoint) and "control" not in retested[k]
            continue
        pair = (sus["control_from"], sus["control_to"])
        assert not {sus["from"], sus["to"]} & set(pair) and len(retested[k]["control"]) == 2
        assert not any((x["from"], x["to"]) == pair and x["kind"] == sus["kind"] for x in rec["suspects"])
