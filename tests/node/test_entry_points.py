"""Every node family offers run(quick=..., store=..., parent=..., spec=..., launcher=..., timeout=...)
-> RunRecord, the call a survey makes on each node."""

import inspect

import pytest

from rmax.bench import cpurate, memcopy, memlat, oslat, peakflops, stream

FAMILIES = [cpurate, memcopy, memlat, oslat, peakflops, stream]


@pytest.mark.parametrize("mod", FAMILIES, ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def test_run_has_the_survey_signature(mod):
    params = inspect.signature(mod.run).parameters
    for name in ("quick", "store", "parent", "spec", "launcher", "timeout"):
        assert name in params, name


def test_a_survey_style_call_stores_a_child_run(db):
    from rmax.store import open_store

    with open_store(db) as store:
        with store.start_run("survey") as parent:
            rec = oslat.run(quick=True, store=store, parent=parent.id, spec=None, launcher=None, timeout=120,
                            tests=["null"], budget=0.2)
        assert rec.status == "ok" and rec.parent == parent.id
        assert [c.id for c in store.children(parent.id)] == [rec.id]
