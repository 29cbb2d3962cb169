"""The matrix at scale: the analysis of a synthetic 1024-rank matrix (rmax-net matrix
--self-test-analysis, no MPI world of 1024 ranks), the sampled design's rounds, the retest
budget, and a record stream cut short in the rounds or during the retests still giving a summary."""

import json
import random
import statistics
import subprocess

from netutil import mpirun, records

from rmax.families import matrix
from rmax.families import get
from rmax.native import executable


def self_test(n: int, timeout: float) -> list[dict]:
    proc = subprocess.run([executable("rmax-net"), "matrix", "--self-test-analysis", str(n)], capture_output=True,
                          text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


def matchings(schedule: dict, n: int) -> set[tuple[int, int]]:
    """The schedule's pairs, checking that in every round each rank meets at most one other."""
    pairs = set()
    for row in schedule["partner"]:
        assert len(row) == n
        for a, b in enumerate(row):
            if b >= 0:
                assert b != a and row[b] == a
                pairs.add((min(a, b), max(a, b)))
    return pairs


def test_analysis_of_1024_ranks_flags_the_planted_pairs_only():
    """2% slow pairs planted in a 1024-rank matrix of 64 switches: every one is a suspect, no healthy
    pair is (within each class the healthy spread is 10%, and across switches is 3x slower than inside:
    without the classes every trunk pair would be a suspect). The whole analysis (class statistics,
    suspects, controls, retest rounds) in well under 10 s of CPU: O(n^2 log n). (CPU time: the wall
    time on a machine shared with others says nothing of the analysis.)"""
    run, sampled = self_test(1024, timeout=300)[:2]
    n, g = run["n"], run["group_of"]
    planted = {tuple(p) for p in run["planted"]}
    sus = run["suspects"]
    assert len(planted) > 20000 and {tuple(s[:3]) for s in sus} == planted
    assert run["cpu_seconds"] < 10
    by_kind = {k: {(f, t) for f, t, kk in planted if kk == k} for k in (0, 1)}
    capped = sus[:run["retest_cap"]]
    controls = [(s[3], s[4], s[2]) for s in capped]
    assert all(c[0] >= 0 for c in controls) and len(set(controls)) == len(controls)   # distinct while any is left
    for f, t, kind, cf, ct, _ in capped:
        assert not {f, t} & {cf, ct} and (cf, ct) not in by_kind[kind]
        assert (g[f] == g[t]) == (g[cf] == g[ct])                                       # of the suspect's class
    # retest rounds: the capped suspects only, the ranks of each round disjoint
    assert all(s[5] == -1 for s in sus[run["retest_cap"]:])
    rounds: dict[int, list[int]] = {}
    for f, t, _, cf, ct, r in capped:
        rounds.setdefault(r, []).extend((f, t, cf, ct))
    assert sorted(rounds) == list(range(run["retest_rounds"]))
    assert all(len(v) == len(set(v)) for v in rounds.values())
    assert run["retest_rounds"] < len(capped) / 50                                      # concurrent, not serial
    # the sampled design: O(log n) rounds, every pair inside a switch, each rank meets other switches
    assert sampled["design"] == "sampled" and sampled["rounds"] < 60
    pairs = matchings(sampled, n)
    assert len(pairs) == sampled["pairs"] < n * (n - 1) // 20
    assert all((a, b) in pairs for a in range(n) for b in range(a + 1, min(n, a + 16)) if g[a] == g[b])
    met = {a: {g[b] for p in pairs for a_, b in (p, p[::-1]) if a_ == a} for a in range(0, n, 97)}
    assert all(len(groups) >= 10 for groups in met.values())


def test_schedules_of_an_odd_rank_count():
    """37 ranks: the full design meets every pair exactly once in 37 rounds; the sampled one fewer."""
    recs = self_test(37, timeout=120)
    sampled, full = recs[1], recs[2]
    n = 37
    assert full["rounds"] == n and full["pairs"] == n * (n - 1) // 2 == len(matchings(full, n))
    assert sampled["pairs"] == len(matchings(sampled, n)) < full["pairs"]


def test_median_without_a_pair_is_the_median_of_the_rest():
    rng = random.Random(7)
    for n in (3, 4, 7):
        m = [[None if i == j else float(rng.choice([1, 2, 2, 3, 5])) for j in range(n)] for i in range(n)]
        group_of = [i % 2 for i in range(n)]
        for kind in ("latency", "bandwidth"):
            c = matrix._ClassValues(m, group_of, kind)
            for i in range(n):
                for j in range(n):
                    if i != j:
                        rest = c.without(i, j)
                        assert c.median_without(i, j) == (statistics.median(rest) if rest else None)


def _records(n: int, lat, bw, suspects, retests=(), done=None, design="full", pairs=None) -> list[dict]:
    s = matrix.SCHEMA
    recs = [{"schema": s, "record": "header", "hosts": [f"h{i}" for i in range(n)], "ranks": n, "rounds": n - 1,
             "retests": 3, "retesting": True, "retest_budget": 30.0, "design": design,
             "pairs": pairs or n * (n - 1) // 2, "pairs_total": n * (n - 1) // 2, "group_of": []},
            {"schema": s, "record": "matrix", "latency": lat, "bandwidth": bw, "validated": True,
             "class_stats": [{"kind": "bandwidth", "class": "all", "pairs": 4, "median": 100.0, "spread": 1.0}],
             "suspects": suspects}]
    recs += [{"schema": s, "record": "retests", "round": r, "suspects": x} for r, x in enumerate(retests)]
    return recs + ([{"schema": s, "record": "done", "validated": True, **done}] if done is not None else [])


N = 4
LAT = [[None if i == j else 1e-6 for j in range(N)] for i in range(N)]
BW = [[None if i == j else 100.0 for j in range(N)] for i in range(N)]
BW[0][1] = 20.0
SUSPECTS = [{"from": 0, "to": 1, "kind": "bandwidth", "class": "all", "concurrent": 20.0, "control_from": 2,
             "control_to": 3, "retest_round": 0},
            {"from": 1, "to": 0, "kind": "bandwidth", "class": "all", "concurrent": 30.0, "control_from": 3,
             "control_to": 2, "retest_round": 1}]
FIRST = [{"suspect": 0, "alone": [21.0, 19.5, 20.5], "alone_cpu_shared": [0, 0, 0], "control": [99.0, 101.0, 100.0],
          "control_cpu_shared": [0, 0, 0]}]


def test_a_stream_stopped_during_the_retests_keeps_the_matrix():
    """The run's watchdog fired after the first retest round: the summary has the matrix, the first
    suspect's verdict, the second named as not retested; status partial, saying what is missing."""
    fam = get("matrix")
    parsed = fam.parse(_records(N, LAT, BW, SUSPECTS, [FIRST]))
    s = parsed.summary
    assert parsed.status == "partial" and "1 of 2 suspects not retested" in parsed.error
    assert s.bandwidth[0][1] == 20.0 and s.retest_status == "not finished"
    first, second = s.suspects
    assert first.flagged and first.control_median == 100.0
    assert second.verdict == "not retested: run stopped" and not second.flagged
    assert any("retests not finished: 1 of 2 suspects not retested" in n for n in fam.view(s).notes)
    # finished, but the budget ran out after the first round: ok, and the second is listed as such
    done = fam.parse(_records(N, LAT, BW, SUSPECTS, [FIRST], {"retest_budget_used_up": True}))
    assert done.status == "ok" and done.summary.retest_status == "budget used up"
    assert done.summary.suspects[1].verdict == "not retested: budget used up"
    assert any("30 s retest budget was used up" in n for n in fam.view(done.summary).notes)
    # no matrix measured: nothing to keep
    header_only = _records(N, LAT, BW, SUSPECTS)[:1]
    assert fam.parse(header_only).status == "failed"


def test_a_sampled_matrix_leaves_unmeasured_pairs_none():
    lat = [[None if i == j or abs(i - j) == 2 else 1e-6 for j in range(N)] for i in range(N)]
    bw = [[None if i == j or abs(i - j) == 2 else 100.0 for j in range(N)] for i in range(N)]
    fam = get("matrix")
    parsed = fam.parse(_records(N, lat, bw, [], done={}, design="sampled", pairs=4))
    s = parsed.summary
    assert parsed.status == "ok" and s.design == "sampled" and s.latency[0][2] is None
    assert fam.view(s).notes[0].startswith("sampled: 4 of 6 pairs")
    assert "sampled: 4 of 6 pairs" in fam.view(s).tables[0].caption
    assert type(s).load(s.to_dict()).latency[0][2] is None


def test_retest_budget_and_sampled_design_under_mpi():
    """4 ranks, the sampled design forced (at 4 ranks its shifts 1 and 2 meet every pair) and no
    time for retests: every suspect is listed as not retested, none silently dropped."""
    proc = mpirun(4, "matrix", "--json", "-", "--budget", "0.002", "--max-samples", "5", "--bw-size", "64K",
                  "--design", "sampled", "--retest-budget", "0")
    assert proc.returncode == 0, proc.stderr
    recs = records(proc)
    parsed = get("matrix").parse(recs)
    s = parsed.summary
    assert parsed.status == "ok" and s.design == "sampled" and s.pairs == s.pairs_total == 6
    assert not [r for r in recs if r.get("record") == "retests"]
    assert all(x.verdict == "not retested: budget used up" for x in s.suspects)
    assert s.retest_status == ("budget used up" if s.suspects else "done")
    # every concurrent round is a record of its own, written when it ends, with the same numbers as the matrix
    rounds = [r for r in recs if r.get("record") == "round"]
    assert [r["round"] for r in rounds] == list(range(s.rounds))
    a, b, lat, _, bw, _, _ = next(c for c in rounds[0]["cells"] if c[2] is not None)
    assert s.latency[a][b] == s.latency[b][a] == lat and s.bandwidth[a][b] == bw
    # a run stopped after its first round (watchdog, lost host) keeps that round's pairs: partial
    cut = recs[:recs.index(rounds[0]) + 1]
    part = get("matrix").parse(cut)
    assert part.status == "partial" and "after round 1 of" in part.error and part.samples
    measured = {(i, j) for i, row in enumerate(part.summary.bandwidth) for j, v in enumerate(row) if v is not None}
    assert measured == {(c[0], c[1]) for c in rounds[0]["cells"]}
    assert part.summary.latency[a][b] == lat and {c.kind for c in part.summary.class_stats} == {
        "latency", "bandwidth"}


def test_rounds_budget_stops_the_rounds_and_says_so_under_mpi():
    """6 ranks, every rank's operations slowed 5 ms on the last rank's pairs, two pairs at once and
    a rounds budget shorter than the rounds: the rounds run in a shuffled order, each a record, none
    started past the budget, the pairs of those run kept and counted, the retests at most two pairs
    at once; the run is ok and its view says how many rounds ran."""
    proc = mpirun(6, "matrix", "--json", "-", "--budget", "0.002", "--max-samples", "5", "--min-samples", "3",
                  "--bw-size", "64K", "--pairs-at-once", "2", "--rounds-budget", "0.05", "--self-test-slow-last",
                  "--retests", "2", "--retest-budget", "5")
    assert proc.returncode == 0, proc.stderr
    recs = records(proc)
    done = next(r for r in recs if r.get("record") == "done")
    rounds = [r["round"] for r in recs if r.get("record") == "round"]
    planned = next(r for r in recs if r.get("record") == "header")["rounds"]
    assert done["rounds_budget_used_up"] and 1 <= done["rounds_run"] == len(rounds) < planned
    parsed = get("matrix").parse(recs)
    s = parsed.summary
    assert parsed.status == "ok" and s.rounds_run == len(rounds)
    assert s.pairs == sum(len(r["cells"]) for r in recs if r.get("record") == "round") // 2
    assert any(n.startswith(f"rounds budget used up: {len(rounds)} of {s.rounds} rounds") for n in get("matrix").view(s).notes)
    for r in (r for r in recs if r.get("record") == "retests"):
        assert len(r["suspects"]) <= 2
    # without a budget every round runs, in the planned order
    full = records(mpirun(6, "matrix", "--json", "-", "--budget", "0.002", "--max-samples", "5", "--min-samples", "3",
                          "--bw-size", "64K", "--pairs-at-once", "2", "--no-retest"))
    assert [r["round"] for r in full if r.get("record") == "round"] == list(range(planned))
