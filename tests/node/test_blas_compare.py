"""`rmax bench blas`: one child dgemm run per installed BLAS under a stored comparison."""

import json

from cliutil import run_cli

from rmax.families import blas_compare
from rmax.families.blas_compare import BlasRate, BlasRow


def _row(name, rounds):
    return BlasRow(name, name, "/" + name, "ok", dgemm=[BlasRate(64, sorted(rounds)[len(rounds) // 2], rounds)])


def test_significance_names_the_fastest():
    rows = [_row("a", [10.0, 10.1, 9.9, 10.0]), _row("b", [5.0, 5.1, 4.9, 5.0])]
    fastest, versus = blas_compare.significance(rows, 64)
    assert fastest == "a" and [v.variant for v in versus] == ["b"]
    assert versus[0].significant and abs(versus[0].slower_by - 0.5) < 0.02


def test_a_difference_within_the_rounds_noise_or_below_five_percent_is_not_slower():
    # rounds that overlap (a busy minute in each): no verdict, however tight one round's blocks are
    rows = [_row("a", [10.0, 6.0, 9.9]), _row("b", [9.0, 7.0, 8.5]), _row("c", [9.8, 9.7, 9.75])]
    fastest, versus = blas_compare.significance(rows, 64)
    assert fastest == "a" and not any(v.significant for v in versus)
    # 3% slower with no noise at all: significant by the test, but below the smallest change reported
    rows = [_row("a", [10.0, 10.0, 10.0]), _row("b", [9.7, 9.7, 9.7])]
    assert not blas_compare.significance(rows, 64)[1][0].significant


def test_cli_compares_every_library(db):
    proc = run_cli("bench", "blas", "--sizes", "64", "--no-hpl", "--rounds", "2", "--json", check=True, timeout=300)
    rec = json.loads(proc.stdout)
    assert rec["kind"] == "blas" and rec["status"] == "ok"
    libs = rec["summary"]["libraries"]
    assert len(libs) == len(blas_compare.libraries()) >= 1
    assert all(r["status"] == "ok" and [d["n"] for d in r["dgemm"]] == [64] and r["dgemm"][0]["median"] > 0
               for r in libs)
    assert rec["summary"]["fastest"] in {r["variant"] for r in libs} and rec["summary"]["hpl_n"] is None
    from rmax.store import open_store

    with open_store(db) as store:
        kids = store.children(rec["id"])
    # the libraries in turn, once a round
    assert sorted(k.kind for k in kids) == ["dgemm"] * 2 * len(libs)
    assert [k.label for k in sorted(kids, key=lambda k: k.started_at)][:len(libs) + 1] == \
        [f"blas {r['variant']} round 1" for r in libs] + [f"blas {libs[0]['variant']} round 2"]
    assert all(len(r["dgemm"][0]["rounds"]) == 2 and len(r["runs"]) == 2 for r in libs)


def test_rounds_are_paired_so_a_load_that_moves_both_cancels():
    from rmax.stats import differ_paired, differ_significantly

    # a busy round slows both libraries alike: b is 20% slower in every round
    a, b = [30.0, 12.0, 45.0], [24.0, 9.6, 36.0]
    assert not differ_significantly(a, b)[0] and differ_paired(a, b)[0]
    assert differ_paired([1.0, 2.0], [1.0])[1] != differ_paired([1.0, 2.0], [1.0])[1]   # unequal: nan
