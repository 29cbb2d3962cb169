"""The OSU-like families (rma: one-sided put/get/accumulate; nbc: non-blocking collectives and
their overlap; mlat: concurrent pairs' latency) and coll's reduce_scatter, scatter and gather:
each kernel's tiny case on 2 ranks validates, its corrupt self-test fails validation, and bad
input is one line, exit 2, with nothing stored. Correctness only: budgets are tiny."""

import json

import pytest
from cliutil import run_cli
from netutil import NO_MPICH, mpirun, records

from rmax.families import get
from rmax.native import executable
from rmax.store import open_store

TINY = ["--budget", "0.002", "--max-samples", "5"]
# each kernel under Open MPI's build (mpirun) and MPICH's (mpiexec): one-sided and non-blocking calls
# are where two MPIs differ most
MPIS = pytest.mark.parametrize("mpi", [pytest.param([], id="openmpi"), pytest.param(["--mpi", "mpich"], id="mpich",
                                                                                     marks=NO_MPICH)])


def stored(db, kind) -> list:
    with open_store(db) as store:
        return store.list(kind=kind)


@MPIS
def test_rma_every_op_sync_and_test_validates_and_reads_back(db, mpi):
    proc = run_cli("bench", "rma", "--sizes", "8", "--window", "4", "--budget", "0.002", *mpi, "--json", timeout=120)
    assert proc.returncode == 0, proc.stderr
    rec = json.loads(proc.stdout)
    assert rec["status"] == "ok", rec.get("error")
    fam = get("rma")
    (run,) = stored(db, "rma")
    s = fam.load(run)
    assert {(p.op, p.sync, p.test) for p in s.points} == {(o, y, t) for o in ("put", "get", "acc")
                                                          for y in ("lock", "flush", "fence", "pscw")
                                                          for t in ("latency", "bandwidth")}
    for p in s.points:
        assert p.validated and p.latency > 0 and p.bandwidth == pytest.approx(8 / p.latency)
        assert p.window == (4 if p.test == "bandwidth" else 1)
    keys = [f.key for f in fam.headline(s)]
    assert keys == [f"latency.{o}.flush.8" for o in ("put", "get", "acc")] + \
        [f"bandwidth.{o}.flush.8" for o in ("put", "get", "acc")]
    assert len(fam.metrics(s)) == len(s.points)


@MPIS
def test_nbc_every_op_validates_and_its_overlap_follows_osu(db, mpi):
    ops = "iallreduce,ibcast,ialltoall,ireduce,iallgather,ireduce_scatter,iscatter,igather"
    proc = run_cli("bench", "nbc", "--ops", ops, "--sizes", "64", "--repeats", "1", "--budget", "0.002", *mpi, "--json",
                   timeout=120)
    assert proc.returncode == 0, proc.stderr
    (run,) = stored(db, "nbc")
    s = get("nbc").load(run)
    assert [p.op for p in s.points] == ops.split(",")
    for p in s.points:
        assert p.validated and len(p.overlap_repeats) == 1 and p.comm > 0 and p.compute > 0
        assert 0 < p.busy <= p.overall * 1.0001
        assert p.overlap == pytest.approx(min(100.0, max(0.0, 100 * (1 - (p.overall - p.busy) / p.comm))), abs=1e-6)
    assert [f.key for f in get("nbc").headline(s)] == [f"overlap.{op}.2.64" for op in ops.split(",")]


@MPIS
def test_mlat_validates(db, mpi):
    proc = run_cli("bench", "mlat", "--sizes", "0,9", "--budget", "0.002", *mpi, "--json", timeout=120)
    assert proc.returncode == 0, proc.stderr
    (run,) = stored(db, "mlat")
    s = get("mlat").load(run)
    assert s.pairs == 1 and [p.size for p in s.points] == [0, 9]
    assert all(p.validated and 0 < p.latency <= p.slowest * 1.0001 for p in s.points)


@pytest.mark.parametrize("family, args", [
    ("rma", ["--sizes", "8", "--syncs", "flush,pscw", "--tests", "latency"]),
    ("nbc", ["--ops", "iallreduce,ibcast,ialltoall,iscatter", "--sizes", "64", "--repeats", "1"]),
    ("mlat", ["--sizes", "8"]),
    ("coll", ["--ops", "reduce_scatter,scatter,gather,bcast", "--sizes", "64", "--orders", "natural"]),
])
def test_corrupt_self_test_fails_validation(family, args):
    proc = mpirun(2, family, *args, *TINY, "--json", "-", "--self-test-corrupt")
    assert proc.returncode == 0, proc.stderr
    pts = [r for r in records(proc) if r.get("record") == "point"]
    assert pts and not any(r["validated"] for r in pts), pts
    if family != "coll":
        assert get(family).parse(records(proc)).status == "invalid"


def test_coll_reduce_scatter_scatter_gather_validate():
    proc = mpirun(2, "coll", "--ops", "reduce_scatter,scatter,gather", "--sizes", "8,100",
                  "--orders", "natural,reversed", *TINY, "--json", "-")
    pts = [r for r in records(proc) if r.get("record") == "point"]
    assert {r["op"] for r in pts} == {"reduce_scatter", "scatter", "gather"} and all(r["validated"] for r in pts)


def rmax_cli(capsys, *args: str) -> tuple[int, str, str]:
    """`rmax ARGS` in this process (a refusal needs no MPI, and a new interpreter costs seconds here)."""
    import signal
    import sys

    from rmax.cli.app import main

    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)}
    hook = sys.unraisablehook
    try:
        main(list(args))
        code = 0
    except SystemExit as e:
        code = e.code
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)
        sys.unraisablehook = hook
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("family, args, words", [
    ("rma", ["--np", "3", "--oversubscribe"], ["exactly 2 ranks", "not 3"]),
    ("rma", ["--sizes", "6"], ["multiple of 4"]),
    ("rma", ["--syncs", "lock,spin"], ["--syncs", "spin"]),
    ("nbc", ["--ops", "iallreduce,ifoo"], ["--ops", "ifoo"]),
    ("nbc", ["--sizes", "0"], ["--sizes"]),
    ("mlat", ["--np", "3", "--oversubscribe"], ["even number of ranks", "not 3"]),
    ("coll", ["--ops", "scatter,spray"], ["spray"]),
])
def test_bad_input_is_one_line_and_no_run(db, capsys, family, args, words):
    code, out, err = rmax_cli(capsys, "bench", family, "--quick", *args)
    lines = err.splitlines()
    assert code == 2 and out == "" and 1 <= len(lines) <= 2 and lines[0].startswith("rmax: error: "), err
    assert all(w in lines[0] for w in words), err
    assert stored(db, family) == []


@pytest.mark.parametrize("args, words", [
    (["rma", "--ops", "put,swap"], ["--ops", "swap"]),
    (["rma", "--ops", "acc", "--sizes", "8,6"], ["multiple of 4"]),
    (["nbc", "--ops", "ibarrier"], ["--ops", "ibarrier"]),
    (["mlat", "--budget", "0"], ["--budget"]),
])
def test_native_refuses_bad_options_before_mpi_starts(args, words):
    import subprocess

    proc = subprocess.run([executable("rmax-net"), *args], capture_output=True, text=True, timeout=30)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and all(w in lines[0] for w in words), proc.stderr
