"""`rmax compare --fail-on`: three DGEMM runs a side, OpenBLAS against the reference BLAS (ten times
slower at any load: a real regression), taken in turn so that the machine's load falls on both sides:
a regression exits 1 and names it, at every size measured; the same runs the other way round are an
improvement, which gates only with --fail-on change; every tested change says what it could detect."""

from __future__ import annotations

import json

import pytest

from cliutil import run_cli

DGEMM = ("bench", "dgemm", "--quick", "--sweep", "square", "--sizes", "128,256", "--json")


@pytest.fixture(scope="module")
def sides(tmp_path_factory):
    env = {"RMAX_DB": str(tmp_path_factory.mktemp("failon") / "s.db")}
    fast, slow = [], []
    for _ in range(3):
        fast.append(json.loads(run_cli(*DGEMM, env=env, check=True).stdout)["id"])
        slow.append(json.loads(run_cli(*DGEMM, "--blas", "reference", env=env, check=True).stdout)["id"])
    return env, ",".join(fast), ",".join(slow)


def test_a_regression_fails_the_gate_at_every_size(sides):
    env, fast, slow = sides
    proc = run_cli("compare", fast, slow, "--fail-on", "regression", "--json", env=env)
    assert proc.returncode == 1, proc.stderr
    assert "significant regression" in proc.stderr and "DGEMM" in proc.stderr, proc.stderr
    out = json.loads(proc.stdout)
    changes = [c for c in out["changes"] if c["kind"] == "dgemm"]
    assert len(changes) == 2 and all(c["regression"] and c["change"] < -0.5 for c in changes), changes
    assert all(c["detectable"] is not None and c["detectable"] < -c["change"] for c in changes), changes
    assert out["regressions"] == 2


def test_an_improvement_passes_the_regression_gate_not_the_change_gate(sides):
    env, fast, slow = sides
    assert run_cli("compare", slow, fast, "--fail-on", "regression", env=env).returncode == 0
    proc = run_cli("compare", slow, fast, "--fail-on", "change", env=env)
    assert proc.returncode == 1 and "significant change" in proc.stderr, proc.stderr
