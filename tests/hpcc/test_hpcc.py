"""gups, ptrans and fft (HPC Challenge's RandomAccess, PTRANS and FFT): each kernel on a tiny
case on 2 ranks passes its own HPCC check and stores its figures; each self-test that damages
the answer comes out invalid; bad input is refused in one line before a run exists; the quick
survey's plan on several nodes has GUPS and PTRANS, and FFT only on request."""

import subprocess

import pytest
from cliutil import assert_one_line_error, run_cli

from rmax.bench.family import RunContext
from rmax.families import get, run
from rmax.errors import RmaxError
from rmax.native import executable
from rmax.store import open_store
from rmax.survey.plan import TURN_LEAST, make_plan
from rmax.survey.steps import FamilyStep, by_name

TINY = {"gups": {"table_size": 1024, "mpi_table_size": 4096},
        "ptrans": {"n": 100, "nb": 16, "repeats": 2},
        "fft": {"n": 256, "plan": "estimate"}}
FORMS = {"gups": ["single", "star", "mpi"], "ptrans": ["mpi"], "fft": ["single", "star", "mpi"]}


def measure(db, name: str, **extra):
    fam = get(name)
    with open_store(db) as store:
        rec = run(fam, fam.options(True, **TINY[name], **extra), RunContext(store=store))
        return fam, store.get(rec.id)


@pytest.mark.parametrize("name", sorted(TINY))
def test_each_kernel_passes_its_check_on_two_ranks(db, name):
    fam, rec = measure(db, name)
    assert rec.status == "ok", rec.error
    s = fam.load(rec)
    assert [p.form for p in s.points] == FORMS[name] and s.ranks == 2
    for p in s.points:
        assert p.validated and p.value > 0 and p.seconds > 0 and p.check is not None, p
        assert p.ranks == (1 if p.form == "single" else 2)
    figs = fam.metrics(s)
    assert {f.key for f in figs} == set(FORMS[name])
    for f in figs:   # each figure is its stored field, in its quantity's unit
        point = s.point(f.key)
        assert f.value == pytest.approx(point.value * fam.SCALE) and f.unit == fam.UNIT and f.at
    assert len(fam.view(s).tables[0].rows) == len(s.points)
    if name == "gups":   # the MPI form's table is the one asked for, the local ones each rank's
        assert s.point("mpi").size == 4096 and s.point("star").size == 1024 and s.point("mpi").check == 0
    if name == "ptrans":
        assert len(s.point("mpi").repeats) == 2 and s.point("mpi").value == min(s.point("mpi").repeats)


@pytest.mark.parametrize("name", sorted(TINY))
def test_a_damaged_answer_fails_the_check(db, name):
    fam, rec = measure(db, name, self_test_corrupt=True)
    assert rec.status == "invalid" and "check failed" in rec.error
    s = fam.load(rec)
    assert s.points and not any(p.validated for p in s.points)
    assert fam.metrics(s) == []   # a failed form stands for no figure


def test_bad_input_is_one_line_and_nothing_is_stored(db):
    assert_one_line_error(run_cli("bench", "fft", "--forms", "single,double", "--np", "2"), 2, "unknown form 'double'")
    # what only the family can judge is refused by its check, before a run row exists, as the CLI shows it
    for name, given, words in (("gups", {"table_size": 3000}, "not a power of two"),
                               ("ptrans", {"p": 3, "q": 1}, "3 x 1 grid needs 3 ranks")):
        with open_store(db) as store, pytest.raises(RmaxError, match=words):
            run(get(name), get(name).options(True, **given), RunContext(store=store))
    with open_store(db) as store:
        assert store.list() == []


def test_the_kernel_refuses_bad_options_before_mpi_starts():
    for argv in (["gups", "--forms", "mpi,nope"], ["gups", "--mpi-table-size", "3000"], ["ptrans", "--p", "2"],
                 ["fft", "--plan", "fast"]):
        proc = subprocess.run([executable("rmax-hpcc"), *argv], capture_output=True, text=True, timeout=10)
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 2 and len(lines) == 1 and "error" in lines[0], proc.stderr


def test_the_quick_survey_plans_gups_and_ptrans_on_several_nodes_and_fft_on_request():
    def plan(names=None):
        steps = [s for s in by_name(names) if s.name != "tune"]
        defaults = {s.name: s.family.options(True) for s in steps if isinstance(s, FamilyStep)}
        return make_plan([(s.name, s.share, s.where) for s in steps], defaults, nodes=4, sharing=4, cores=2,
                         quick=True, budget=60.0, net_budget=240.0, done=("inventory",))

    p = plan()
    assert {"gups", "ptrans"} <= {s.step for s in p.steps} and p.get("fft") is None
    gups, ptrans = p.get("gups"), p.get("ptrans")
    assert gups.where == ptrans.where == "all" and gups.seconds > 0 and ptrans.seconds > 0
    assert set(gups.sizes["forms"]) == {"star", "mpi"} and gups.sizes["mpi_table_size"] >= 4 * 1024
    assert ptrans.sizes["n"] >= get("ptrans").options(True).nb
    # within the planned budget, but for the steps whose fixed work in turns asks for more (the
    # plan's total states it)
    assert sum(s.seconds for s in p.steps if s.step not in TURN_LEAST) <= 300.0 + 0.1 * len(p.steps)
    assert p.total == round(sum(s.seconds for s in p.steps) + p.checks_s, 1)
    assert plan(["inventory", "fft"]).get("fft").seconds > 0   # named, it is planned
