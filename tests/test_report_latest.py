"""`rmax report latest` reports the latest survey, whatever was run since, and says so."""

import json

from cliutil import run_in_process

from rmax.store import open_store


def test_report_latest_is_the_latest_survey_and_says_so(db, tmp_path):
    with open_store() as s:
        with s.start_run("oslat"):
            pass
    code, out, err = run_in_process(["report", "latest", "--out", str(tmp_path / "none")])
    assert code == 1 and "no survey stored yet" in err and "rmax survey" in err, err   # not the oslat run
    with open_store() as s:
        with s.start_run("survey", summary={"steps": []}) as survey:
            pass
    code, _, err = run_in_process(["bench", "oslat", "--quick", "--tests", "null"])   # a later run of another kind
    assert code == 0, err
    code, out, err = run_in_process(["report", "latest", "--out", str(tmp_path / "r")])
    assert code == 0 and f"report of the latest survey, {survey.id[:8]}" in out, (out, err)
    code, out, err = run_in_process(["report", "--json", "--out", str(tmp_path / "r2")])
    assert code == 0 and json.loads(out)["run"] == survey.id and json.loads(out)["latest_survey"], (out, err)
