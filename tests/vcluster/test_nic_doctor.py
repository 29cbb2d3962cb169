"""NIC settings parsing and the doctor's rules on synthetic node reports."""

from __future__ import annotations

from rmax.nic.doctor import diagnose
from rmax.nic.settings import parse_coalesce, parse_shaped_rate, parse_speed

ETHTOOL_C = """Coalesce parameters for eth1:
Adaptive RX: on  TX: off
rx-usecs: 125
rx-frames: 0
tx-usecs: 0
tx-frames: 0
"""


def iface(name="eth1", mtu=1500, speed=1000, coalesce=None, net="10.1.0.0/24", shaped=None):
    return {"name": name, "mtu": mtu, "speed_mbps": speed, "state": "up", "driver": "e1000e",
            "coalesce": coalesce, "offloads": {}, "networks": [net], "shaped_mbps": shaped}


def test_parsers():
    assert parse_coalesce(ETHTOOL_C) == {"adaptive_rx": True, "adaptive_tx": False, "rx-usecs": 125,
                                         "rx-frames": 0, "tx-usecs": 0, "tx-frames": 0}
    assert parse_coalesce(None) is None
    assert parse_speed("\tSpeed: 1000Mb/s\n\tDuplex: Full\n") == (1000, "full")
    assert parse_speed("\tSpeed: Unknown!\n") == (None, None)


def test_rules_cite_their_measurements():
    nodes = [{"host": "a", "interfaces": [iface(coalesce=parse_coalesce(ETHTOOL_C))]},
             {"host": "b", "interfaces": [iface(mtu=9000, speed=100)]}]
    found = {f.rule: f for f in diagnose(nodes, {"latency": "measured here: 40 us"})}
    assert set(found) == {"interrupt-coalescing", "mtu-mismatch", "speed-mismatch"}
    itr = found["interrupt-coalescing"]
    assert itr.where == "a/eth1" and "117 us to 29 us" in itr.evidence[0] and itr.evidence[1] == "measured here: 40 us"
    assert "ethtool -C eth1" in itr.fix
    assert "a/eth1" in found["mtu-mismatch"].message and "b/eth1" in found["mtu-mismatch"].message


def test_clean_gigabit_network_gets_the_jumbo_hint_only():
    nodes = [{"host": h, "interfaces": [iface(coalesce={"rx-usecs": 0, "rx-frames": 1})]} for h in "ab"]
    assert [f.rule for f in diagnose(nodes)] == ["jumbo-frames"]


def test_evidence_reports_a_failed_mtu_as_failed_not_as_zero(db):
    from rmax.cli.netdoctor import _evidence
    from rmax.store import open_store

    with open_store() as store:
        with store.start_run("experiment-mtu", params={"mtus": [1500, 9000]}) as run:
            run.update(summary={"results": [
                {"mtu": 1500, "latency_us": 20.0, "bandwidth_MBps": 110.0, "hpl_gflops": 3.5},
                {"mtu": 9000, "latency_us": None, "bandwidth_MBps": None, "error": "traffic failed at MTU 9000"}]})
        ev = _evidence(store)
    assert "MTU 1500: 110.0 MB/s, 20.0 us, HPL 3.50 GFLOPS" in ev["mtu"]
    assert "MTU 9000: traffic failed" in ev["mtu"] and "MTU 9000: 0.0" not in ev["mtu"]


def test_a_shaped_link_is_judged_by_its_shaper_not_by_veth():
    # `tc -j qdisc show` of a veth shaped to 100 Mbit/s (tc gives tbf's rate in bytes/s)
    tbf = '[{"kind":"tbf","handle":"80c5:","root":true,"refcnt":3,"options":{"rate":12500000,"burst":4087}}]'
    assert parse_shaped_rate(tbf) == 100
    assert parse_shaped_rate('[{"kind":"noqueue","handle":"0:","root":true,"options":{}}]') is None
    quiet = {"rx-usecs": 0, "rx-frames": 1}
    slow = [{"host": h, "interfaces": [iface(speed=10000, shaped=100, coalesce=quiet)]} for h in "ab"]
    assert diagnose(slow) == []          # 100 Mb/s links: no jumbo-frame advice for 10 Gb/s
    mixed = slow[:1] + [{"host": "c", "interfaces": [iface(speed=10000, shaped=1000, coalesce=quiet)]}]
    found = [f for f in diagnose(mixed) if f.rule == "speed-mismatch"]
    assert len(found) == 1 and "100 Mb/s, 1000 Mb/s" in found[0].message
