"""A survey measured beside other work says so where an administrator reads it: the terminal summary
names the busy runs as the report does, "what limits this cluster" explains no busy figure, and the
exit status is 4 (0 with --busy-ok) when every step ran."""

from agent.agentutil import spin, stop_all
from cliutil import run_cli


def test_a_survey_beside_a_runaway_process_names_its_busy_runs_and_exits_4(db):
    hogs = [spin(), spin()]    # two CPUs' worth of other work
    try:
        busy = run_cli("survey", "--quick", "--steps", "inventory,peakflops,stream,hpl", timeout=300)
        accepted = run_cli("survey", "--quick", "--steps", "inventory,stream", "--busy-ok", timeout=300)
    finally:
        stop_all(hogs)
    assert busy.returncode == 4, busy.stderr[-2000:]
    said = busy.stdout + busy.stderr
    assert "were measured on a busy node" in said and "other processes used" in said, said[-3000:]
    assert "What limits this cluster:" in busy.stdout
    assert "HPL reaches" not in busy.stdout and "Compute: not judged" in busy.stdout, busy.stdout[-3000:]
    assert "runs were measured on a busy node (named above)" in busy.stderr
    assert accepted.returncode == 0 and "measured on a busy node" in accepted.stdout, accepted.stderr[-2000:]
    # the peak measured beside the hogs is shown, and is no basis for % of peak (the nominal Rpeak or none)
    from rmax.inventory.load import busy_line
    from rmax.store import open_store
    from rmax.survey.headline import by_role, headline

    with open_store() as store:
        survey = store.list(kind="survey")[-1]
        kids = store.children(survey.id)
    (peak,) = [k for k in kids if k.kind == "peakflops"]
    (info,) = [k for k in kids if k.kind == "info"]
    assert busy_line(peak.load), peak.load
    rp = info.summary["rpeak"]
    assert rp["measured_in"] == peak.id and rp["basis"] == "nominal" and "busy node" in rp["basis_reason"], rp
    rows = headline(kids)
    basis = by_role(rows, "peak_basis")
    assert basis is None or basis["run"] == info.id, basis
    assert any(r["run"] == peak.id and "not the basis" in r["statistic"] for r in rows), rows
