"""The hpl family's one run path with rmax-hpl: every stored figure of a test is its JSON record's
(no text round trip), and a JSON that does not account for every test of the input fails the run.
The engines below run the real rmax-hpl; they only keep (or cut) its JSON file before it is read."""

import json
import shutil

import pytest

from rmax.bench.family import RunContext
from rmax.families import run
from rmax.families.hpl import HPL
from rmax.hpl.dat import HplConfig
from rmax.hpl.engines.base import ENGINES, register
from rmax.hpl.engines.rmax_hpl import RmaxHpl
from rmax.launch import LaunchSpec
from rmax.store import open_store

# Two grids' worth of variants: broadcasts, a look-ahead depth, a factorisation, and one unchecked.
CONFIG = dict(ns=[120, 200], nbs=[16], grids=[(1, 2)], bcasts=[0, 5], depths=[0, 1], pfacts=[0], rfacts=[2])


@pytest.fixture
def engine(tmp_path):
    kept = tmp_path / "kept.jsonl"

    class Keep(RmaxHpl):
        name = "rmax-keep"

        def collect(self, workdir, stdout, cfg):
            shutil.copy(workdir / "results.jsonl", kept)
            return super().collect(workdir, stdout, cfg)

    class Cut(RmaxHpl):
        name = "rmax-cut"

        def collect(self, workdir, stdout, cfg):
            path = workdir / "results.jsonl"
            path.write_text("".join(path.read_text().splitlines(keepends=True)[:-1]))
            return super().collect(workdir, stdout, cfg)

    register(Keep)
    register(Cut)
    yield kept
    ENGINES.pop("rmax-keep")
    ENGINES.pop("rmax-cut")


def _run(cfg, engine_name):
    with open_store() as store:
        rec = run(HPL, HPL.options(config=cfg, engine=engine_name),
                  RunContext(store=store, spec=LaunchSpec(program=[], np=2), timeout=120))
        return rec, store.children(rec.id)


def test_stored_tests_are_rmax_hpls_json_records(db, engine):
    cfg = HplConfig(**CONFIG)
    rec, children = _run(cfg, "rmax-keep")
    records = [json.loads(line) for line in engine.read_text().splitlines()]
    s = HPL.load(rec)
    assert rec.status == "ok" and len(records) == len(s.tests) == len(children) == cfg.test_count == 8
    for r, t, child in zip(records, s.tests, children):
        p = r["params"]
        assert (t.code, t.n, t.nb, t.p, t.q, t.depth, t.ndiv, t.nbmin) == (
            r["variant"], p["N"], p["NB"], p["P"], p["Q"], p["DEPTH"], p["NDIV"], p["NBMIN"])
        assert ("1ring", "1ringM", "2ring", "2ringM", "long", "longM")[t.bcast] == p["BCAST"]
        assert ("Left", "Crout", "Right")[t.pfact] == p["PFACT"] and ("Left", "Crout", "Right")[t.rfact] == p["RFACT"]
        assert (t.time_s, t.gflops, t.residual, t.verdict) == (r["time_s"], r["gflops"], r["residual"], r["status"])
        assert {k: (v.max, v.min) for k, v in t.phases.items()} == {k: (v["max"], v["min"])
                                                                   for k, v in r["phases_s"].items()}
        assert t.run == child.id and child.summary["gflops"] == r["gflops"] and child.params["code"] == r["variant"]
    # the figure readers get is the same number, read from its summary field
    best = HPL.headline(s)[0]
    assert best.role == "hpl_rmax" and best.value == max(r["gflops"] for r in records)


def test_unchecked_tests_are_stored_as_not_checked(db, engine):
    rec, _ = _run(HplConfig(ns=[100], nbs=[16], grids=[(1, 2)], threshold=-1.0), "rmax-keep")
    t, = HPL.load(rec).tests
    assert rec.status == "ok" and t.verdict == "not checked" and t.residual is None


def test_a_json_missing_a_test_fails_the_run(db, engine):
    cfg = HplConfig(ns=[100, 140], nbs=[16], grids=[(1, 2)])
    rec, children = _run(cfg, "rmax-cut")
    assert rec.status == "failed" and "reported 1 of the 2 tests" in rec.error
    assert len(HPL.load(rec).tests) == len(children) == 1     # what was reported is kept, and said to be short
