"""`rmax accept` on one node's real surveys (peakflops, a few seconds each): references.toml read
and refused, verdicts against a reference far above and far below what the node measured, the
reference named, JUnit XML one failure per failed metric, references written from an accepted run
and read back; no fleet verdict for a class of one node."""

from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET

import pytest

from cliutil import assert_one_line_error, run_cli, run_in_process

STEPS = "inventory,peakflops"


@pytest.fixture(scope="module")
def surveys(tmp_path_factory):
    """Three quick local surveys in a store of this module's: (store path, survey ids). Three, not two:
    with one degree of freedom a busy machine's jumps leave even a tenfold miss undecided."""
    db = tmp_path_factory.mktemp("accept") / "s.db"
    env = {"RMAX_DB": str(db)}
    ids = [json.loads(run_cli("survey", "--busy-ok", "--quick", "--steps", STEPS, "--json", env=env, check=True,
                              timeout=240).stdout)["id"] for _ in range(3)]
    return db, ids


def accept(db, *args):
    return run_cli("accept", *args, env={"RMAX_DB": str(db)}, timeout=120)


def figures(db, ids) -> dict[str, list[float]]:
    """metric -> the node's figure in each survey, as accept reads them."""
    from rmax.accept.measured import gather
    from rmax.store import Store

    with Store(db) as store:
        series, _ = gather(store, [store.get(i) for i in ids])
    return {m: s.values for (_, m), s in series.items()}


def steadiest(figs: dict[str, list[float]]) -> str:
    """The metric whose figures agree best over the surveys (a shared machine makes some jump)."""
    return min(figs, key=lambda m: math.log(max(figs[m]) / min(figs[m])) if min(figs[m]) > 0 else math.inf)


def write_refs(path, metric, value, unit, lower=-0.1):
    path.write_text(f'[[reference]]\nmetric = "{metric}"\nvalue = {value!r}\nunit = "{unit}"\nlower = {lower!r}\n')
    return str(path)


def test_reference_far_above_fails_far_below_passes(surveys, tmp_path):
    db, ids = surveys
    figs = figures(db, ids)
    metric = steadiest(figs)
    got = math.exp(sum(math.log(v) for v in figs[metric]) / len(figs[metric]))
    unit = "GFLOPS"
    high = accept(db, "--from", ",".join(ids), "--references", write_refs(tmp_path / "hi.toml", metric, 10 * got, unit),
                  "--junit", str(tmp_path / "hi.xml"), "--json")
    assert high.returncode == 1, high.stderr
    rec = json.loads(high.stdout)
    (v,) = [v for v in rec["summary"]["verdicts"] if v["metric"] == metric]
    assert v["state"] == "fail" and v["against"] == "reference" and "reference #1" in v["reference"], v
    assert v["diff"] < -0.8 and v["interval"][1] < -0.1, v
    assert rec["summary"]["failed_nodes"] == rec["hosts"]
    # the JUnit file, as a JUnit reader takes it: one test case per node and metric judged (here only the
    # one with a reference: one node has no fleet), one failure, its verdict the message
    from junitparser import Failure, JUnitXml

    suites = list(JUnitXml.fromfile(str(tmp_path / "hi.xml")))
    cases = [c for suite in suites for c in suite]
    assert len(suites) == 1 and len(cases) == 1, ET.tostring(ET.parse(tmp_path / "hi.xml").getroot())[:400]
    (case,) = cases
    (failure,) = [r for r in case.result if isinstance(r, Failure)]
    assert case.name == metric and "reference #1" in failure.message, failure.message

    low = accept(db, "--from", ",".join(ids), "--references", write_refs(tmp_path / "lo.toml", metric, got / 10, unit),
                 "--json")
    assert low.returncode == 0, low.stderr
    (v,) = [v for v in json.loads(low.stdout)["summary"]["verdicts"] if v["metric"] == metric]
    assert v["state"] == "pass" and v["detectable"] is not None and v["detectable"] < -0.1, v
    assert "could have detected" in v["why"], v
    # one node is a class of one: nothing to set it against, so no fleet verdict
    assert {v["against"] for v in json.loads(low.stdout)["summary"]["verdicts"]} == {"reference"}


def test_one_survey_cannot_decide_alone(surveys, tmp_path):
    db, ids = surveys
    metric = steadiest(figures(db, ids))
    proc = accept(db, "--from", ids[0], "--references", write_refs(tmp_path / "r.toml", metric, 1.0, "GFLOPS"), "--json")
    assert proc.returncode == 0, proc.stderr
    (v,) = [v for v in json.loads(proc.stdout)["summary"]["verdicts"] if v["metric"] == metric]
    assert v["state"] == "undecided" and "another survey" in v["why"], v


def test_write_references_round_trip(surveys, tmp_path):
    db, ids = surveys
    out = tmp_path / "references.toml"
    proc = accept(db, "--from", ",".join(ids), "--write-references", str(out), "--json")
    assert proc.returncode == 0, proc.stderr
    from rmax.accept.references import load

    refs = load(out)
    assert {r.metric for r in refs.references} == set(figures(db, ids))
    assert all(r.lower == refs.fleet.lower and r.node_class for r in refs.references)
    again = accept(db, "--from", ",".join(ids), "--references", str(out), "--json")
    assert again.returncode == 0, again.stderr
    states = {v["state"] for v in json.loads(again.stdout)["summary"]["verdicts"]}
    assert "fail" not in states


@pytest.mark.parametrize("text,words", [
    ("[[reference]]\nmetric = 'x'\nvalue = 1\nunit = 'GB/s'\n", ["reference #1", "neither lower nor upper"]),
    ("[[reference]]\nmetric = 'x'\nvalue = -1\nunit = 'GB/s'\nlower = -0.1\n", ["reference #1: value"]),
    ("[[reference]]\nmetric = 'x'\nvalue = 1\nunit = 'GB/s'\nlower = 0.5\n", ["reference #1: lower"]),
    ("[[reference]]\nmetric = 'x'\nvalue = 1\nunit = 'GB/s'\nlower = -0.1\nspeed = 3\n", ["unknown key 'speed'"]),
    ("[fleet]\nlower = -2\n", ["[fleet] lower"]),
    ("[nodes]\n", ["unknown table or key 'nodes'"]),
    ("[links]\nspeed = 1\n", ["[links] takes only lower, rate"]),
    ("[links]\nrate = 'fast'\n", ["[links] rate 'fast' is not a rate"]),
    ("[links]\nrate = 1e9\nlower = 0.2\n", ["[links] lower"]),
    ("[[reference]\n", ["not valid TOML"]),
])
def test_bad_references_refused(tmp_path, db, text, words):
    path = tmp_path / "r.toml"
    path.write_text(text)
    code, out, err = run_in_process(["accept", "--from", "latest", "--references", str(path)])
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) <= 2, (code, err)
    assert all(w in err for w in words), err
    assert not db.exists()      # refused while parsing: no store opened, no run


def test_unit_mismatch_refused_before_storing(surveys, tmp_path):
    db, ids = surveys
    metric = next(m for m in sorted(figures(db, ids)) if m.startswith("peakflops:"))
    before = run_cli("runs", "list", "--kind", "accept", env={"RMAX_DB": str(db)}).stdout
    proc = accept(db, "--from", ",".join(ids), "--references", write_refs(tmp_path / "u.toml", metric, 1.0, "MB/s"))
    assert_one_line_error(proc, 2, "MB/s", "GFLOPS")
    assert run_cli("runs", "list", "--kind", "accept", env={"RMAX_DB": str(db)}).stdout == before


def test_from_refuses_a_run_that_is_no_survey(surveys):
    db, ids = surveys
    from rmax.store import Store

    with Store(db) as store:
        child = store.children(ids[0])[0].id
    assert_one_line_error(accept(db, "--from", child[:8]), 2, "not a survey")


def test_more_surveys_only_while_undecided(surveys, db, tmp_path):
    """Sequential sampling: one survey leaves the reference undecided (one figure, no noise), so
    --more runs another, of the undecided step (and the inventory) only, and stops there."""
    figs = figures(*surveys)
    metric = steadiest(figs)
    got = math.exp(sum(math.log(v) for v in figs[metric]) / len(figs[metric]))
    ref = write_refs(tmp_path / "r.toml", metric, got / 10, "GFLOPS", lower=-0.5)
    proc = run_cli("accept", "--quick", "--steps", "inventory,peakflops,stream", "--repeat", "1", "--more", "3",
                   "--references", ref, "--json", timeout=400)
    assert proc.returncode == 0, proc.stderr
    s = json.loads(proc.stdout)["summary"]
    assert len(s["surveys"]) == 2, s["surveys"]     # the second decided: no third
    from rmax.store import Store

    with Store(db) as store:
        second = store.get(s["surveys"][1])
    assert second.params["steps"] == ["inventory", "peakflops"], second.params
    (v,) = s["verdicts"]
    assert v["state"] == "pass" and v["n"] == 2, v


def test_drain_reason_names_the_failures_readable_and_bounded(monkeypatch):
    from rmax.accept.workflow import drain_reason
    from rmax.launch.drain import REASON_MAX, drain

    verdicts = [{"node": "n1", "state": "fail", "metric": f"stream:tri\u00e4d.{i} at 21 MiB arrays", "diff": -0.4,
                 "against": "fleet"} for i in range(20)] + [{"node": "n2", "state": "fail", "metric": "x", "diff": -1,
                                                              "against": "reference"}]
    r = drain_reason("n1", verdicts)
    assert r.startswith("stream:tri\u00e4d.0 -40% vs fleet; ") and r.endswith(" [rmax accept]"), r
    assert len(r) <= REASON_MAX and all(c.isprintable() for c in r), r
    monkeypatch.setenv("PATH", "/nonexistent")
    assert drain("n1", r) == "not drained: scontrol not found"
    assert drain("n1;reboot", r).startswith("not drained: ") and "not a Slurm node name" in drain("n1;reboot", r)


def test_nodes_of_one_machine_are_said_to_have_taken_turns_or_to_have_measured_at_once():
    from types import SimpleNamespace

    from rmax.accept.workflow import shared_note

    def survey(turns):
        steps = [{"step": "inventory", "where": "node"}, {"step": "net", "where": "pair"},
                 {"step": "dgemm", "where": "node", **({"turns": turns} if turns else {})}]
        return SimpleNamespace(summary={"plan": {"steps": steps}})

    assert shared_note([survey(6)], 1) is None
    assert "took turns at the per-node steps" in shared_note([survey(6), survey(6)], 6)
    at_once = shared_note([survey(6), survey(0)], 6)
    assert "measured at once" in at_once and "slowed below its share of the cores is not seen" in at_once
