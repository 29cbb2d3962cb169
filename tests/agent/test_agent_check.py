"""`rmax agent check` without measuring: undecided on a node with no baseline, busy under other work,
unhealthy under a runaway process, a small CPU quota or throttling, the line within its timeout, the
drain and resume commands and the reason, bad input. Drift, draining and resuming on a real Slurm,
with real probes: tests/vcluster/test_vcluster_slurm.py. Fast: no probe runs here."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
import time

import pytest
from agentutil import CpuBudget, runs, spin, stop_all
from cliutil import ROOT, assert_one_line_error, run_cli

from rmax.agent import check as check_mod
from rmax.agent.config import build
from rmax.agent.history import Series
from rmax.store import open_store


def test_no_baseline_is_undecided_exit_0_and_measures_nothing(db):
    # the load of this shared machine judged apart: tests below, in a namespace of their own
    p = run_cli("agent", "check", "--drain", "--node", "n1", "--json", "--unhealthy-load", "1e6", "--max-load", "1e6",
                "--window", "0.5", timeout=60)
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
            out = check_mod.check(build({}, {"window": 0.5, "max_load": 0.5, "unhealthy_load": 1e6, "slurm": "off"}),
                                  store, ("dgemm",), 3600.0, "n1")   # timed from this process's start
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
    line = "drift: dgemm (median) 5 GFLOPS now; step 'square' is \"slow\"\n" + "x" * 300
    out = check_mod.Outcome("drift", line, "n3")
    assert check_mod.drain(out) == "drained n3" and out.drained
    argv = log.read_text().splitlines()
    assert argv[:3] == ["update", "NodeName=n3", "State=DRAIN"] and len(argv) == 4
    reason = argv[3].removeprefix("Reason=")
    assert reason.startswith("rmax: dgemm (median) 5 GFLOPS now; step 'square' is \"slow\" xx")   # quotes kept
    assert len(reason) == check_mod.REASON_MAX and reason.endswith("... [drift]")


def _fake_scontrol(tmp_path, monkeypatch, reason):
    """An scontrol that shows the node drained for `reason` and logs each call's arguments."""
    log = tmp_path / "calls"
    fake = tmp_path / "scontrol"
    fake.write_text(f'#!/bin/sh\necho "$*" >> {log}\n'
                    f'[ "$1" = show ] && echo "NodeName=n3 Arch=x86_64 State=IDLE+DRAIN ThreadsPerCore=1 '
                    f'Reason={reason} [root@2026-12-02T04:00:00]"\nexit 0\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    return log


def test_resume_returns_only_a_node_a_check_drained(tmp_path, monkeypatch):
    log = _fake_scontrol(tmp_path, monkeypatch, "rmax: load of other processes 1.00 >= 1 [unhealthy]")
    passed = check_mod.Outcome("undecided", "undecided: no baseline", "n3")
    assert check_mod.resume(passed).startswith("resumed n3, drained by a check for: load of other processes")
    assert log.read_text().splitlines() == ["show node -o n3", "update NodeName=n3 State=RESUME"] and passed.resumed
    log.unlink()
    assert check_mod.resume(check_mod.Outcome("busy", "busy: Slurm job 7 on this node", "n3")) is None
    assert not log.exists()          # not passed: not even asked
    log = _fake_scontrol(tmp_path, monkeypatch, "disk replaced, do not use")    # an administrator's drain
    assert check_mod.resume(check_mod.Outcome("ok", "ok: dgemm ...", "n3")) is None
    assert log.read_text().splitlines() == ["show node -o n3"]


# The health criteria in a network namespace of the test's own: the load counted is that "node"'s
# alone, whatever else runs on this (shared) machine.
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces and cgroups need root")


@pytest.fixture
def netns():
    name = "rmax-t-" + secrets.token_hex(3)
    subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        yield ["ip", "netns", "exec", name]
    finally:
        subprocess.run(["ip", "netns", "delete", name], check=False)


def _check(db, *args, prefix=(), preexec=None, timeout=120):
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "RMAX_DB": str(db)}
    t0 = time.monotonic()
    p = subprocess.run([*prefix, sys.executable, "-m", "rmax", "agent", "check", "--node", "n1", "--slurm", "off",
                        "--json", *args], capture_output=True, text=True, env=env, preexec_fn=preexec, timeout=timeout)
    assert p.stdout, p.stderr
    return json.loads(p.stdout), p.returncode, time.monotonic() - t0


@needs_root
def test_a_runaway_process_makes_the_node_unhealthy_and_is_named(db, netns):
    runaway = subprocess.Popen([*netns, "sh", "-c", "while :; do :; done"])
    try:
        out, rc, _ = _check(db, "--window", "1", prefix=netns)
    finally:
        stop_all([runaway])
    assert rc == 1 and out["state"] == "unhealthy", out
    assert "load of other processes" in out["line"] and f"pid {runaway.pid} sh " in out["line"], out
    out, rc, _ = _check(db, "--window", "1", prefix=netns)   # gone: healthy (no baseline: nothing measured)
    assert rc == 0 and out["state"] == "undecided" and "healthy" in out["line"], out
    assert runs(db) == []


@needs_root
@pytest.mark.skipif(not CpuBudget.available(), reason="needs root and the cgroup cpu controller")
def test_a_small_cpu_quota_is_unhealthy_and_said_within_the_timeout(db):
    budget = CpuBudget(0.03, period_us=100_000)      # 3 % of a CPU, as the node
    try:
        out, rc, seconds = _check(db, "--timeout", "50", preexec=budget.enter)
    finally:
        budget.remove()
    assert rc == 1 and out["state"] == "unhealthy" and "a CPU quota of 0.03 CPUs" in out["line"], out
    assert seconds < 50, seconds


@needs_root
@pytest.mark.skipif(not CpuBudget.available(), reason="needs root and the cgroup cpu controller")
def test_throttling_by_a_quota_is_unhealthy(db):
    budget = CpuBudget(0.6, period_us=100_000)
    hog = subprocess.Popen(["sh", "-c", "while :; do :; done"], preexec_fn=budget.enter)
    try:   # the hog's own load not judged here: what is measured is the throttling it causes
        out, rc, _ = _check(db, "--window", "2", "--unhealthy-load", "1000", "--max-load", "1000",
                            preexec=budget.enter)
    finally:
        stop_all([hog])
        budget.remove()
    assert rc == 1 and out["state"] == "unhealthy" and "throttled" in out["line"] and "0.6 CPUs" in out["line"], out


def test_the_line_comes_within_the_timeout_naming_the_step(db):
    out, rc, seconds = _check(db, "--window", "30", "--timeout", "8", "--unhealthy-load", "1000", "--max-load",
                              "1000")
    assert rc == 1 and out["state"] == "failed", out
    assert "no verdict within --timeout 8 s" in out["line"] and "the 30 s load window was still running" in out["line"]
    assert seconds < 8, seconds


def test_a_bad_node_name_is_one_line(db):
    assert_one_line_error(run_cli("agent", "check", "--node", "n1; reboot", timeout=60), 2, "--node",
                          "not a Slurm node name")
    assert runs(db) == []
