"""The MTU experiment's one workflow (nic/mtu_experiment.py) over a stand-in link back-end: the MTUs
take turns in every repeat, each probe a stored child run, an MTU whose traffic failed named with
its failed run and measured no further while the others go on, and the links restored after."""

from contextlib import contextmanager

from rmax.errors import RunFailed
from rmax.launch import Host
from rmax.nic import mtu_experiment
from rmax.store import open_store


class FakeLinks:
    """Links whose probe fails at 9000 bytes, as a switch port that drops jumbo frames."""

    where, hosts, between, size = "fake links", ["a", "b"], ["a", "b"], 1000
    params, summary = {"fake": True}, {"side": "note"}
    hpl_hosts, hpl_hostfile, launcher = [Host("a", 1), Host("b", 1)], None, None

    def __init__(self):
        self.set, self.restored, self.probed = [], False, []

    @contextmanager
    def changes(self):
        try:
            yield lambda mtu: self.set.append(mtu) or {"a": mtu}
        finally:
            self.restored = True

    def probe(self, store, parent, mtu, repeat, runs):
        self.probed.append((mtu, repeat))
        with store.start_run("tcp-matrix", parent=parent, hosts=self.between) as pr:
            runs.append(pr.id)
            if mtu == 9000 or (mtu, repeat) in self.lose:
                raise RunFailed("no reply")
        return {"latency_us": None if (mtu, repeat) in self.empty else 10.0 + repeat,
                "bandwidth_MBps": 100.0 * mtu / 1500}

    lose, empty = (), ()


def test_one_workflow_alternates_names_a_failed_mtu_and_restores(db):
    links = FakeLinks()
    rec = mtu_experiment.run(links, [1500, 9000, 4000], hpl_n=0, timeout=10, repeats=2)
    assert links.restored and links.set == [1500, 9000, 4000, 1500, 4000]   # 9000 not set again after it failed
    assert links.probed == [(1500, 1), (9000, 1), (4000, 1), (1500, 2), (4000, 2)]
    assert rec.status == "ok" and rec.params["fake"] and rec.summary["side"] == "note"
    ok, bad, other = rec.summary["results"]
    assert "error" not in ok and ok["latency_us_repeats"] == [11.0, 12.0] and ok["applied"] == {"a": 1500}
    assert "traffic failed at MTU 9000 between a and b (no reply)" in bad["error"] and bad["latency_us"] is None
    assert other["bandwidth_MBps"] > ok["bandwidth_MBps"] and "hpl_status" not in other
    with open_store() as store:
        kids = store.children(rec.id)
    assert {k.id for k in kids} == {x for r in (ok, bad, other) for x in r["runs"]} and len(kids) == 5
    assert [k.status for k in kids if k.id in bad["runs"]] == ["failed"]


def test_a_repeat_that_measured_nothing_leaves_the_experiment_partial(db):
    # A probe that fails at an MTU whose traffic passed before is a lost repeat, not a finding about
    # the MTU; a figure that came back empty is missing too. Neither may leave the experiment ok.
    links = FakeLinks()
    links.lose, links.empty = [(4000, 2)], [(1500, 3)]
    rec = mtu_experiment.run(links, [1500, 4000], hpl_n=0, timeout=10, repeats=3)
    assert links.probed == [(1500, 1), (4000, 1), (1500, 2), (4000, 2), (1500, 3), (4000, 3)]  # 4000 goes on
    assert rec.status == "partial"
    assert rec.error == ("repeats that measured nothing: MTU 1500: no latency_us in 1 repeat(s); "
                         "MTU 4000: repeat 2: no reply")
    base, other = rec.summary["results"]
    assert "error" not in other and other["missing"] == {"lost_repeats": ["repeat 2: no reply"]}
    assert base["missing"] == {"latency_us": 1} and base["latency_us_repeats"] == [11.0, 12.0]
    from rmax.nic.mtu_results import table

    cells = table(rec.summary["results"], 3)[1]
    assert "(2 of 3 repeats)" in cells[0][1] and "(2 of 3 repeats)" in cells[1][1]
