"""Result codes with multi-digit DEPTH, NDIV and NBMIN (HPL prints each with %d,
BCAST is one digit): the tests pass and `rmax hpl run` stores an ok run with
every parameter read back from the code. About 3 s."""

import json

from cliutil import run_cli
from hplutil import dat


def test_depth_and_ndiv_of_ten_store_an_ok_run(db, tmp_path):
    path = tmp_path / "HPL.dat"
    path.write_text(dat((40,), (8,), depth=(10,), ndiv=(10,), nbmin=(12, 1), bcast=(3,)))
    proc = run_cli("hpl", "run", str(path), "--np", "1", "--json", timeout=120)
    assert proc.returncode == 0, proc.stderr
    rec = json.loads(proc.stdout)
    assert rec["status"] == "ok" and len(rec["summary"]["tests"]) == rec["summary"]["passed"] == 2
    assert [t["params"]["code"] for t in rec["tests"]] == ["WR103C10R12", "WR103C10R1"]
    for t, nbmin in zip(rec["tests"], (12, 1)):
        assert t["status"] == "ok" and t["summary"]["verdict"] == "PASSED"
        assert (t["params"]["depth"], t["params"]["bcast"], t["params"]["ndiv"], t["params"]["nbmin"]) == (
            10, 3, 10, nbmin)
