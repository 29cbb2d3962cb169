"""Exit codes a script can act on: 2 usage, 1 a failed run or an unusable store, 128 + the signal."""

import signal

import pytest
from cliutil import peakflops_running, run_in_process

from rmax.store import open_store


@pytest.mark.parametrize("np", ["99999999999", str(10 ** 30), str(10 ** 300), "-" + str(10 ** 40)])
def test_any_out_of_range_count_gets_the_range_message(db, np):
    code, _, err = run_in_process(["bench", "coll", "--np", np])
    assert code == 2 and err.startswith(f"rmax: error: --np must be at {'least 1' if np[0] == '-' else 'most'}"), err


def test_sigint_exits_130_and_stores_the_run_interrupted(db):
    proc = peakflops_running(db)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130 and "interrupted" in err
    with open_store() as s:
        assert [r.status for r in s.list()] == ["interrupted"]
