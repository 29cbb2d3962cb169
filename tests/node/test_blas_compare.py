"""`rmax bench blas`: one child dgemm run per installed BLAS under a stored comparison."""

import json

from cliutil import run_cli

from rmax.bench import blas_compare
from rmax.bench.blas_compare import BlasRate, BlasRow


def test_significance_names_the_fastest():
    rows = [BlasRow("a", "a", "/a", "ok", dgemm=[BlasRate(64, 10.0)]),
            BlasRow("b", "b", "/b", "ok", dgemm=[BlasRate(64, 5.0)])]
    samples = {"a/square/64x64x64": [10.0, 10.1, 9.9, 10.0], "b/square/64x64x64": [5.0, 5.1, 4.9, 5.0]}
    fastest, versus = blas_compare.significance(rows, samples, 64)
    assert fastest == "a" and [v.variant for v in versus] == ["b"]
    assert versus[0].significant and abs(versus[0].slower_by - 0.5) < 1e-9


def test_cli_compares_every_library(db):
    proc = run_cli("bench", "blas", "--sizes", "64", "--no-hpl", "--json", check=True, timeout=300)
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
    assert sorted(k.kind for k in kids) == ["dgemm"] * len(libs)
