"""up / down / status on real namespaces; down after a crashed up."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from cliutil import run_cli
from vcutil import force_down, leftovers, needs_root, unique_name


@needs_root
def test_up_status_down_leaves_nothing():
    name = unique_name()
    try:
        proc = run_cli("vcluster", "up", "--name", name, "--nodes", "3", "--switches", "3", "--trunks", "mesh",
                       "--mtu", "9000", "--json", check=True)
        assert '"healthy": true' in proc.stdout
        links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
        assert f"{name}-s3" in links and "mtu 9000" in links
        st = run_cli("vcluster", "status", "--name", name, check=True)
        assert "up" in st.stdout and f"{name}-n3" in st.stdout
        # the node has its own host name and address
        out = run_cli("vcluster", "exec", "--name", name, f"{name}-n2", "--", "hostname", check=True)
        assert out.stdout.strip() == f"{name}-n2"
        # and knows every other node's MAC for good: no ARP to lose when many ranks connect at once
        def eth0(node):
            return json.loads(subprocess.run(["ip", "-n", node, "-j", "addr", "show", "eth0"], capture_output=True,
                                             text=True, check=True).stdout)[0]

        nodes = {f"{name}-n{i}": eth0(f"{name}-n{i}") for i in (1, 2, 3)}
        macs = {a["local"]: e["address"] for e in nodes.values() for a in e["addr_info"] if a["family"] == "inet"}
        assert len(set(macs.values())) == 3
        for node, e in nodes.items():
            neigh = json.loads(subprocess.run(["ip", "-n", node, "-j", "neigh", "show", "dev", "eth0"],
                                              capture_output=True, text=True, check=True).stdout)
            own = next(a["local"] for a in e["addr_info"] if a["family"] == "inet")
            assert {x["dst"]: (x["lladdr"], x["state"]) for x in neigh} == \
                {ip: (mac, ["PERMANENT"]) for ip, mac in macs.items() if ip != own}
    finally:
        down = run_cli("vcluster", "down", "--name", name)
    assert down.returncode == 0, down.stderr
    assert leftovers(name) == []
    again = run_cli("vcluster", "down", "--name", name)   # idempotent
    assert again.returncode == 0 and "nothing to take down" in again.stdout


@needs_root
@pytest.mark.parametrize("crash_after", [4, 9])
def test_down_cleans_up_after_a_crashed_up(crash_after):
    name = unique_name()
    try:
        proc = subprocess.run([sys.executable, "-m", "rmax", "vcluster", "up", "--name", name, "--nodes", "4",
                               "--switches", "2", "--link", "1gbit"], capture_output=True, text=True, timeout=60,
                              env={**os.environ, "RMAX_VCLUSTER_CRASH_AFTER": str(crash_after)})
        assert proc.returncode == 70, proc.stderr          # died half-way, no rollback
        assert leftovers(name), "the crashed up should have left objects behind"
        down = run_cli("vcluster", "down", "--name", name)
        assert down.returncode == 0, down.stderr
    finally:
        force_down(name)
    assert leftovers(name) == []
