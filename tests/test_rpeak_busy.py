"""`rmax info`'s % of peak basis is not decided by a peak measured while other work ran."""

import json
import subprocess
import sys

from agent.agentutil import spin, stop_all

# The measurement runs in a process of its own: the load readings leave out the measuring
# process's own tree, and the spinning processes are this test's children.
MEASURE = """
import json
from rmax.inventory import rpeak
from rmax.inventory.collect import collect
rows, why = rpeak.measure_peak()
section = rpeak.derive(collect(measure=False)["cpu"], rows, why) if rows else None
print(json.dumps({"rows": bool(rows), "why": why, "section": section}))
"""


def test_a_peak_measured_on_a_busy_node_is_shown_but_not_the_basis():
    from rmax.inventory import rpeak

    hogs = [spin(), spin()]
    try:
        out = subprocess.run([sys.executable, "-c", MEASURE], capture_output=True, text=True, timeout=300, check=True)
    finally:
        stop_all(hogs)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    why, section = got["why"], got["section"]
    assert got["rows"] and why and why.startswith(rpeak.BUSY_PREFIX) and "other processes" in why, why
    assert section["measured"] is not None            # the measurement is shown
    assert section["basis"] == "nominal" and "decides nothing, since it was measured on a busy node" in \
        section["basis_reason"], section["basis_reason"]
