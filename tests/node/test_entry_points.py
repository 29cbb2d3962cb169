"""A registered family runs through family.run with the call a survey makes on each node:
a child run of the survey's, in its store."""


def test_a_survey_style_call_stores_a_child_run(db):
    from rmax.bench.family import RunContext
    from rmax.families import get, run
    from rmax.store import open_store

    fam = get("oslat")
    with open_store(db) as store:
        with store.start_run("survey") as parent:
            rec = run(fam, fam.options(True, tests=("null",), budget=0.2),
                      RunContext(store=store, parent=parent.id, timeout=120, quick=True))
        assert rec.status == "ok" and rec.parent == parent.id
        assert [c.id for c in store.children(parent.id)] == [rec.id]
