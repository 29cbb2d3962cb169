"""`rmax agent check` without measuring: undecided on a node with no baseline, busy under other work,
the drain command and its reason, bad input. Drift and draining on a real Slurm, with real probes:
tests/vcluster/test_vcluster_slurm.py. Fast: no probe runs here."""

from __future__ import annotations

import json
import os

from agentutil import runs, spin, stop_all
from cliutil import assert_one_line_error, run_cli

from rmax.agent import check as check_mod
from rmax.agent.config import build
from rmax.agent.history import Series
from rmax.store import open_store


def test_no_baseline_is_undecided_exit_0_and_measures_nothing(db):
    p = run_cli("agent", "check", "--drain", "--node", "n1", "--json", timeout=60)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["state"] == "undecided" and not out["drained"] and "no baseline of 8 values" in out["line"]
    assert runs(db) == []


def test_a_busy_node_is_not_measured(db, monkeypatch):
    baseline = Series("dgemm", "", "flops_per_second", "median", True, "dgemm", [1e10] * 8)
    monkeypatch.setattr(check_mod, "node_series", lambda store, host, keep: {("dgemm", ""): baseline})
    procs = [spin(), spin()]
    try:
        with open_store() as store:
            out = check_mod.check(build({}, {"window": 0.5, "max_load": 0.5, "slurm": "off"}), store, ("dgemm",),
                                  10.0, "n1")
    finally:
        stop_all(procs)
    assert out.state == "busy" and out.exit_code == 0 and out.line.startswith("busy: load of other processes")
    assert runs(db) == []


def test_drain_runs_scontrol_with_one_argument_per_field(tmp_path, monkeypatch):
    log = tmp_path / "argv"
    fake = tmp_path / "scontrol"
    fake.write_text(f'#!/bin/sh\nfor a in "$@"; do printf "%s\\n" "$a"; done > {log}\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    line = "drift: dgemm (median) 5 GFLOPS now; it's \"slow\"\n" + "x" * 300
    out = check_mod.Outcome("drift", line, "n3")
    assert check_mod.drain(out) == "drained n3" and out.drained
    argv = log.read_text().splitlines()
    assert argv[:3] == ["update", "NodeName=n3", "State=DRAIN"] and len(argv) == 4
    reason = argv[3].removeprefix("Reason=")
    assert reason.startswith("dgemm (median) 5 GFLOPS now; it?s ?slow??xx")
    assert len(reason) == check_mod.REASON_MAX and reason.endswith("... [rmax agent check: drift]")


def test_a_bad_node_name_is_one_line(db):
    assert_one_line_error(run_cli("agent", "check", "--node", "n1; reboot", timeout=60), 2, "--node",
                          "not a Slurm node name")
    assert runs(db) == []
