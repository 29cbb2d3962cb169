"""HPL's progress (rmax-hpl's --progress lines read live, one trajectory per test, stored and
plotted) and hpcc's other kernels (their results typed and shown, their time allowed for)."""

import json
import math

import pytest

from cliutil import run_cli

from rmax.bench.family import RunContext
from rmax.families import run
from rmax.families.hpl import HPL
from rmax.hpl import hpcc_kernels
from rmax.hpl.dat import HplConfig
from rmax.hpl.progress import MAX_POINTS, Tracker, Trajectory, fraction_done
from rmax.launch import LaunchSpec
from rmax.store import open_store


def test_tracker_keeps_one_trajectory_per_test_and_only_its_own_lines():
    seen = []
    tr = Tracker(2, seen.append)
    assert not tr.feed("rmax-step: matgen (rank 0 on a)") and not tr.feed("some other line")
    assert tr.feed("rmax-hpl: test 1: column 64 of 128 (87.5% of the work) 1.50 GFLOPS after 0.010000 s")
    assert tr.feed("rmax-hpl: test 2: column 64 of 256 (57.8% of the work) 2.00 GFLOPS after 0.020000 s\n")
    assert tr.trajectory(1).fraction == [fraction_done(64, 128)] == [0.875] and tr.trajectory(3) is None
    assert (seen[1].test, seen[1].tests, seen[1].n, seen[1].gflops, seen[1].elapsed_s) == (2, 2, 256, 2.0, 0.02)
    assert seen[1].short() == "hpl test 2/2: 58% 2.0 GFLOPS (running rate)"


def test_a_long_trajectory_is_thinned_keeping_its_ends():
    t = Trajectory()
    for i in range(1, 1001):
        t.add(i / 1000, i * 0.01, float(i))
    thin = t.thinned()
    assert len(thin.fraction) == MAX_POINTS and thin.fraction[0] == 0.001 and thin.fraction[-1] == 1.0
    assert thin.gflops == sorted(thin.gflops) and len(set(thin.gflops)) == MAX_POINTS


def test_rmax_engine_progress_is_shown_stored_and_plotted(db, tmp_path):
    (tmp_path / "in.json").write_text(json.dumps({"N": [256, 384], "NB": [32], "P": [1], "Q": [2]}))
    proc = run_cli("hpl", "run", str(tmp_path / "in.json"), "--np", "2", "--progress", "--json", timeout=300)
    assert proc.returncode == 0, proc.stderr
    # not a terminal: plain lines, at every tenth of a test's work, the last at 100%
    assert "hpl test 1/2 (N=256): 100% of the work" in proc.stderr
    assert "hpl test 2/2 (N=384): 100% of the work" in proc.stderr and "GFLOPS (running rate)" in proc.stderr
    rec = json.loads(proc.stdout)
    with open_store() as store:
        s = HPL.load(store.get(rec["id"]))
    for t in s.tests:
        tr = t.trajectory
        assert len(tr.fraction) == math.ceil(t.n / 32)          # one point per panel
        assert tr.fraction == sorted(tr.fraction) and tr.fraction[-1] == 1.0
        assert tr.elapsed_s == sorted(tr.elapsed_s) and 0 < tr.elapsed_s[-1] <= t.time_s
        assert all(g > 0 for g in tr.gflops)
    titles = [p.title for p in HPL.plots([("here", s)])]
    assert "HPL's running rate as the factorisation goes on" in titles
    assert "Where the time went: WR11C2R4 N=256 NB=32 1x2 (here)" in " ".join(titles)
    assert not [t for t in (p.title for p in HPL.plots([("", s)])) if "()" in t]   # a run without a label
    vs_n = next(p for p in HPL.plots([("here", s)]) if p.title.startswith("HPL GFLOPS vs N"))
    assert vs_n.series["here"] == ([256, 384], [t.gflops for t in s.tests])


def test_hpcc_allowance_grows_with_n_and_bounds_the_mpi_randomaccess():
    a = hpcc_kernels.allowance
    # at least what this machine's hpcc took besides HPL (17 s at N=2000 on a busy node; 9 s at N=4000)
    assert a(2000, 2, 0.0) > 17 and a(4000, 2, 0.0) > 9
    assert a(4000, 2, 100.0) - a(4000, 2, 0.0) == pytest.approx(2 / math.sqrt(6) * 100.0)  # DGEMM: its share of HPL's time
    assert a(8000, 2, 0.0) > a(4000, 2, 0.0)
    # N = 10^6 on 2 ranks: the MPI RandomAccess runs stop at hpcc's 60 s bound, the rest grows as N^2
    huge = a(10**6, 2, 0.0)
    local = 4 * 2 * 4 * 2.0 ** math.floor(math.log2(10**12 / 4)) / (hpcc_kernels.LOCAL_GUPS * 1e9)
    assert huge == pytest.approx(local + 4 * hpcc_kernels.RA_TIME_BOUND_S + hpcc_kernels.FIXED_S)


def test_hpcc_results_typed_shown_compared_and_allowed_for(db, tmp_path, monkeypatch):
    cfg = HplConfig(ns=[400], nbs=[64], grids=[(1, 2)])
    with open_store() as store:
        rec = run(HPL, HPL.options(config=cfg, engine="hpcc"),
                  RunContext(store=store, spec=LaunchSpec(program=[], np=2), timeout=300))
        s = HPL.load(rec)
        assert rec.status == "ok" and set(s.hpcc) == {k.key for k in hpcc_kernels.KERNELS}
        assert s.hpcc["StarDGEMM_Gflops"] == float(s.hpcc_summary["StarDGEMM_Gflops"]) > 0
        table = HPL.view(s).tables[1]
        assert table.columns[:3] == ["Kernel", "Value", "Unit"] and len(table.rows) == len(hpcc_kernels.KERNELS)
        keys = {f.key for f in HPL.metrics(s)}
        assert {"rmax", "hpcc.PTRANS_GBs", "hpcc.MPIRandomAccess_GUPs", "hpcc.SingleSTREAM_Triad"} <= keys
        # A timeout no launch can meet, with an allowance for hpcc's other kernels: the message says what the timeout held.
        monkeypatch.setattr(hpcc_kernels, "allowance", lambda n, ranks, hpl_seconds: 0.02)
        rec = run(HPL, HPL.options(config=cfg, engine="hpcc"),
                  RunContext(store=store, spec=LaunchSpec(program=[], np=2), timeout=0.01))
    assert rec.status == "failed" and "timed out" in rec.error
    assert "the 0.03 s timeout included 0.02 s for hpcc's other kernels (RandomAccess, PTRANS, DGEMM, STREAM, FFT" in rec.error
