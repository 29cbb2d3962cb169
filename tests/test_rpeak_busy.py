"""`rmax info`'s % of peak basis is not decided by a peak measured while other work ran."""

from agent.agentutil import spin, stop_all

from rmax.inventory import rpeak
from rmax.inventory.collect import collect


def test_a_peak_measured_on_a_busy_node_is_shown_but_not_the_basis():
    hogs = [spin(), spin()]
    try:
        rows, why = rpeak.measure_peak()
    finally:
        stop_all(hogs)
    assert rows and why.startswith(rpeak.BUSY_PREFIX) and "other processes" in why, why
    cpu = collect(measure=False)["cpu"]
    section = rpeak.derive(cpu, rows, why)
    assert section["measured"] is not None            # the measurement is shown
    assert section["basis"] == "nominal" and "decides nothing, since it was measured on a busy node" in \
        section["basis_reason"], section["basis_reason"]
