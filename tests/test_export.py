"""`rmax runs export`: every row has the hosts it was measured on and its unit; one unit a quantity."""

import csv
import io
import json

from cliutil import run_in_process

from rmax import units
from rmax.families import get
from rmax.store import open_store


def _store_runs():
    """A real family run (oslat's null system call) and runs of no family as HPL and a survey store
    them on one node: no hosts named, numbers whose units are in their names."""
    code, _, err = run_in_process(["bench", "oslat", "--quick", "--tests", "null"])
    assert code == 0, err
    with open_store() as s:
        with s.start_run("hpl") as hpl:
            with s.start_run("hpl-test", parent=hpl.id) as t:
                t.update(summary={"n": 2000, "nb": 128, "time_s": 1.5, "gflops": 3.6, "residual": 0.004,
                                  "phases": {"update": {"max": 1.1, "min": 1.0}}})
    return t.id


def test_every_exported_row_has_a_host_and_a_unit(db):
    test_id = _store_runs()
    code, out, err = run_in_process(["runs", "export", "--format", "csv"])
    assert code == 0, err
    rows = list(csv.DictReader(io.StringIO(out)))
    assert {r["family"] for r in rows} >= {"oslat", "hpl-test"}
    assert all(r["hosts"] and r["unit"] for r in rows), [r for r in rows if not (r["hosts"] and r["unit"])]
    test = {r["key"]: r["unit"] for r in rows if r["run_id"] == test_id}
    assert test == {"n": "1", "nb": "1", "time_s": "s", "gflops": "GFLOPS", "residual": "1",
                    "phases.update.max": "s", "phases.update.min": "s"}
    code, out, err = run_in_process(["runs", "export"])
    assert code == 0, err
    for run in json.loads(out):
        assert run["hosts"] and all(f["unit"] for f in run["figures"]), run
    assert {f["unit"] for r in json.loads(out) if r["kind"] == "oslat" for f in r["figures"]} == {units.LATENCY}


def test_every_bandwidth_is_shown_in_one_unit():
    stream = get("stream")
    s = stream.Summary([_stream_result(k) for k in ("copy", "triad")], 1 << 26, 1 << 22, True)
    assert s.unit == units.BANDWIDTH
    figures = stream.metrics(s) + stream.headline(s)
    assert {f.unit for f in figures} == {units.BANDWIDTH}
    assert [f.value for f in figures] == [1000.0, 3000.0, 3000.0]    # the stored MB/s, not rescaled
    assert get("ptrans").UNIT == units.BANDWIDTH and get("ptrans").SCALE == 1e-6   # records in bytes/s


def _stream_result(kernel):
    from rmax.families.stream import StreamResult

    best = {"copy": 1000.0, "triad": 3000.0}[kernel]
    return StreamResult(kernel, 2, best, best, best, best, best, 10, 11, True)
