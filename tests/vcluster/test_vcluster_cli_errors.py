"""Bad input to `rmax vcluster up`: one line naming what is missing, and nothing created."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from cliutil import assert_one_line_error, run_cli
from vcutil import leftovers, unique_name


@pytest.mark.parametrize("args,words", [
    (["--nodes", "10", "--switches", "2", "--subnet", "10.213.250.0/29"], ["10 nodes need 10 addresses", "has only 6"]),
    (["--nodes", "4", "--switches", "0"], ["--switches must be at least 1"]),
    (["--nodes", "2", "--switches", "3"], ["3 switches but only 2 nodes"]),
    (["--nodes", "2", "--link", "fast"], ["--link 'fast' is not a rate"]),
    (["--nodes", "9", "--switch-sizes", "4,3,3"], ["--switch-sizes adds up to 10 nodes but --nodes is 9"]),
    (["--nodes", "6", "--switch-sizes", "4,two"], ["--switch-sizes '4,two' is not a list of node counts"]),
])
def test_bad_counts(args, words):
    name = unique_name()
    proc = run_cli("vcluster", "up", "--name", name, *args)
    assert_one_line_error(proc, 2, *words)
    assert leftovers(name) == []


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root to drop to nobody")
def test_not_root_names_the_missing_privilege():
    name = unique_name()
    proc = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
                           sys.executable, "-m", "rmax", "vcluster", "up", "--name", name, "--nodes", "4",
                           "--switches", "2"], capture_output=True, text=True, timeout=60, cwd="/")
    assert_one_line_error(proc, 2, "needs root", "CAP_NET_ADMIN")
    assert leftovers(name) == []


def test_down_of_unknown_cluster_is_a_no_op():
    if os.geteuid() != 0:
        pytest.skip("needs root")
    proc = run_cli("vcluster", "down", "--name", unique_name())
    assert proc.returncode == 0 and "nothing to take down" in proc.stdout
