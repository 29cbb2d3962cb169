"""The busy verdict of a run's load readings: CPU throttling by a cgroup quota is busy, and a short
run is judged too (with the clock ticks' error allowed for)."""

import json
import subprocess
import sys

import pytest
from agent.agentutil import CpuBudget
from cliutil import ROOT

from rmax.inventory import load

# Two readings around a second of spinning, in the process's own cgroup (a child, so that the cap
# is on it and not on pytest).
SPIN = """
import json, time
from rmax.inventory import load
a = load._read()
t = time.monotonic()
while time.monotonic() - t < 1.5:
    pass
print(json.dumps({"start": a.as_dict(), "end": load._read().as_dict()}))
"""


@pytest.mark.skipif(not CpuBudget.available(), reason="needs root and the cgroup cpu controller")
def test_a_run_throttled_by_a_cpu_quota_is_busy():
    budget = CpuBudget(0.5, period_us=100_000)
    try:
        out = subprocess.run([sys.executable, "-c", SPIN], capture_output=True, text=True, check=True,
                             preexec_fn=budget.enter, env={"PYTHONPATH": str(ROOT / "src")}).stdout
    finally:
        budget.remove()
    stored = json.loads(out)
    assert stored["start"]["quota"] == pytest.approx(0.5)
    v = load.verdict(stored)
    assert v.throttled >= 0.2 and v.busy, v       # half of each 100 ms period spent waiting
    assert "a CPU quota of 0.5 CPUs throttled rmax" in v.line()
    free = json.loads(subprocess.run([sys.executable, "-c", SPIN], capture_output=True, text=True, check=True,
                                     env={"PYTHONPATH": str(ROOT / "src")}).stdout)
    assert free["start"]["quota"] is None and load.verdict(free).throttled == 0.0


def _readings(seconds: float, others: float, cpus: int = 2) -> dict:
    start = load.Reading(1.0, 1.0, 1.0, 0, cpus, 100.0, 1000.0, 5.0)
    end = load.Reading(1.0, 1.0, 1.0, 0, cpus, 100.0 + others * seconds, 1000.0 + cpus * seconds, 5.0)
    return {"start": start.as_dict(), "end": end.as_dict()}


def test_a_short_run_is_judged_allowing_for_the_clock_ticks():
    assert load.verdict(_readings(0.3, 1.5)).busy           # sure even at 10 ms ticks
    near = load.verdict(_readings(0.3, 0.55))                # over the bound, but within the ticks' error
    assert near is not None and not near.busy
    assert load.verdict(_readings(2.0, 0.55)).busy           # the same over a long run is sure
    old = _readings(2.0, 0.0)                                 # a reading stored before quota was read
    for r in old.values():
        del r["quota"], r["throttled_s"]
    assert load.verdict(old) is not None and not load.verdict(old).busy
