"""`rmax scale` says which of its timed runs were measured on a busy node (their stored load)."""

import json

from agent.agentutil import spin, stop_all
from cliutil import run_cli


def test_scale_names_the_runs_measured_on_a_busy_node(db):
    hogs = [spin(), spin()]    # two CPUs' worth of other work, whatever else this machine runs
    try:
        table = run_cli("scale", "--ranks", "1", "--repeats", "1", "--no-warmup", "--", "sleep", "1.5", timeout=120)
        out = run_cli("scale", "--ranks", "1", "--repeats", "1", "--no-warmup", "--json", "--", "sleep", "1.5",
                      timeout=120)
    finally:
        stop_all(hogs)
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[1].split()[-1] == "busy" and lines[2].endswith("1 of 1"), table.stdout
    assert "1 of the study's runs was measured on a busy node" in table.stdout and "other processes" in table.stdout
    busy = json.loads(out.stdout)["busy_runs"]
    assert len(busy) == 1 and busy[0]["ranks"] == 1 and "CPUs on average" in busy[0]["line"], busy
