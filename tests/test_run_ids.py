"""Run ids as users type them: prefixes and 'latest'."""

from rmax.store import open_store
from rmax.store.runs import resolve_id


def test_latest_is_the_latest_top_level_run(db):
    # A survey's children start after it and finish before it: 'latest' must still be the survey.
    with open_store() as s:
        survey = s.start_run("survey")
        child = s.start_run("hpl-test", parent=survey.id)
        with child:
            pass
        with survey:
            pass
        assert resolve_id(s, "latest") == survey.id
        assert resolve_id(s, child.id[:12]) == child.id
