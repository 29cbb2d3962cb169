"""The search space: N rounding, every factorisation, candidate lists."""

import math

from rmax.tune.nb_seed import from_k_sweep, nb_candidates
from rmax.tune.space import (FALLBACK_NBS, PARAMS, Space, factorisations, from_config, key, n_from_memory, round_n,
                             to_config, variant_code)


def test_every_factorisation_not_only_square():
    assert factorisations(8) == [(1, 8), (2, 4), (4, 2), (8, 1)]
    assert factorisations(12) == [(1, 12), (2, 6), (3, 4), (4, 3), (6, 2), (12, 1)]
    assert factorisations(7) == [(1, 7), (7, 1)]
    assert factorisations(1) == [(1, 1)]


def test_n_rounded_down_to_nb_times_lcm():
    assert round_n(10000, 128, 2, 3) == 9984          # step 128 * 6 = 768
    assert round_n(10000, 128, 2, 3) % (128 * math.lcm(2, 3)) == 0
    assert round_n(10000, 100, 4, 6) == 9600           # lcm(4, 6) = 12, step 1200
    assert round_n(100, 128, 2, 2) == 256              # never below one step
    n = n_from_memory(24 * 2**30, 0.8)
    assert 8 * n * n <= 0.8 * 24 * 2**30 < 8 * (n + 1) ** 2


def test_every_candidate_of_a_level_runs_at_the_same_n():
    sp = Space(ranks=6, n_full=10000, n_reduced=5000, nb=[128, 192, 256])
    full = {sp.sized({**sp.heuristic(), "nb": nb, "grid": g}, full=True)["n"] for nb in sp.nb for g in sp.grid}
    assert full == {9996} and 9996 % math.lcm(1, 2, 3, 6) == 0   # every grid of 6 ranks deals it evenly
    assert {sp.sized({**sp.heuristic(), "nb": nb}, full=False)["n"] for nb in sp.nb} == {4998}


def test_candidate_lists_and_start_points():
    sp = Space(ranks=4, n_full=8000, n_reduced=4000)
    assert sp.grid == [(1, 4), (2, 2), (4, 1)]
    assert sp.nb == list(FALLBACK_NBS)
    for start in (sp.heuristic(), sp.stock()):
        for p in PARAMS:
            assert start[p] in sp.values(p), p
    assert sp.heuristic()["grid"] == (2, 2)     # most square with P <= Q
    assert sp.size == math.prod(len(sp.values(p)) for p in PARAMS)


def test_config_round_trip_and_code():
    sp = Space(ranks=2, n_full=2000, n_reduced=1000)
    c = sp.sized(sp.heuristic(), full=True)
    cfg = to_config(c, 16.0)
    assert len(list(cfg.tests())) == 1
    assert key(from_config(cfg)) == key(c)
    # The advice's 1ringM: on a row of 2 it sends what 1ring sends, so the candidate is written 1ring.
    assert variant_code(c) == "WR10R2C4"
    assert variant_code(Space(ranks=3, n_full=2000, n_reduced=1000).sized(sp.heuristic() | {"grid": (1, 3)},
                                                                           True)) == "WR11R2C4"


def test_values_that_cannot_change_the_run_on_a_grid_are_one_candidate():
    from rmax.tune.session import not_searched

    sp = Space(ranks=2, n_full=2000, n_reduced=1000)
    one = {**sp.stock(), "grid": (1, 2)}
    # 1 x 2: PMAP, SWAP and its threshold, and every BCAST but long coincide.
    same = {key(sp.sized({**one, "pmap": m, "bcast": b, "swap": w, "swap_threshold": t}, True))
            for m in (0, 1) for b in (0, 1, 2, 3, 5) for w in (0, 1, 2) for t in (32, 64, 128)}
    assert len(same) == 1
    assert key(sp.sized({**one, "bcast": 4}, True)) not in same                 # long: two halves
    assert key(sp.sized({**one, "depth": 1}, True)) not in same                 # depth still matters
    two_by_one = {**one, "grid": (2, 1)}                                        # Q = 1: no broadcast at all
    assert len({key(sp.sized({**two_by_one, "bcast": b, "pmap": m}, True)) for b in range(6) for m in (0, 1)}) == 1
    assert len({key(sp.sized({**two_by_one, "swap": w}, True)) for w in (0, 1, 2)}) == 3   # P = 2: swaps differ
    lines = not_searched(sp)
    assert any(x.startswith("1x2: pmap R = C") for x in lines)
    assert any(x.startswith("1x2: bcast 1ring = 1ringM = 2ring = 2ringM = longM") for x in lines)
    assert any(x.startswith("2x1: bcast 1ring = 1ringM = 2ring = 2ringM = long = longM") for x in lines)
    # Rows of 3 and 4: rmax-hpl's plans and HPL's own routines (hpcc, xhpl) differ at 4.
    for q, engine, n in ((3, "rmax", 4), (4, "rmax", 6), (4, "hpcc", 4), (5, "xhpl:/x", 6)):
        s = Space(ranks=q, n_full=2000, n_reduced=1000, engine=engine)
        assert len({key(s.sized({**s.stock(), "grid": (1, q), "bcast": b}, True)) for b in range(6)}) == n, (q, engine)


def test_nb_seeded_from_dgemm_k_sweep(db):
    from rmax.families.dgemm import DgemmPoint, DgemmSummary

    pts = [DgemmPoint(1024, 1024, k, g, g, g, g, 0.0, 5) for k, g in ((64, 10), (128, 19), (192, 20), (256, 18.5),
                                                                       (512, 12))]
    assert from_k_sweep(pts) == [192, 128, 256]
    from rmax.store import open_store

    with open_store() as store:
        nbs, source, _ = nb_candidates(store)
        assert nbs == list(FALLBACK_NBS) and "HPL's usual range" in source
        with store.start_run("dgemm") as r:
            r.update(summary=DgemmSummary([], pts, 1).to_dict())
        nbs, source, _ = nb_candidates(store)
        assert nbs == [192, 128, 256] and "k-sweep" in source and "idle" in source
        # A sweep whose repeats disagree was taken on a busy machine: it ranks nothing.
        noisy = [DgemmPoint(1024, 1024, k, g, 0.6 * g, g, g, 0.0, 5) for k, g in ((64, 10), (128, 19), (192, 20),
                                                                                 (256, 18.5))]
        with store.start_run("dgemm") as r:
            r.update(summary=DgemmSummary([], noisy, 1).to_dict())
        nbs, source, _ = nb_candidates(store)
        assert nbs == list(FALLBACK_NBS) and "busy machine" in source and "k=64" in source


def test_n_follows_the_time_budget_when_memory_would_take_longer():
    from rmax.tune.session import LAUNCH_OVERHEAD_S, TRIAL_SHARE, build_space, predicted_seconds
    from rmax.tune.settings import Settings

    facts = {"memory_bytes_per_node": 24 * 2**30, "nodes": 1, "rate_guess_gflops": 20.0}
    by_memory = build_space(Settings(np=2, mem_fraction=0.8), facts, 2, [192], "test")
    timed = build_space(Settings(np=2, mem_fraction=0.8, budget_s=600.0), facts, 2, [192], "test")
    assert timed.n_full < by_memory.n_full and "600 s budget" in timed.n_source
    assert predicted_seconds(timed.n_full, 20.0) <= 600.0 * TRIAL_SHARE + LAUNCH_OVERHEAD_S
    assert by_memory.n_source == "80% of memory"
    # a budget that memory already fits leaves N to memory; --n always wins
    roomy = build_space(Settings(np=2, mem_fraction=0.8, budget_s=1e9), facts, 2, [192], "test")
    assert roomy.n_full == by_memory.n_full
    assert build_space(Settings(np=2, n=5000, budget_s=60.0), facts, 2, [192], "test").n_full == 5000
