"""`rmax runs list` says when it cuts the list, and what a filter that matched nothing was."""

import json

from cliutil import run_in_process

from rmax.store import open_store


def test_a_cut_list_says_so_and_an_empty_filter_names_itself(db):
    with open_store() as s:
        for _ in range(4):
            with s.start_run("demo"):
                pass
    code, out, err = run_in_process(["runs", "list", "--limit", "3"])
    assert code == 0 and len(out.splitlines()) == 4 and "newest 3 runs shown" in err, (out, err)
    code, out, err = run_in_process(["runs", "list", "--limit", "4", "--json"])
    assert code == 0 and len(json.loads(out)) == 4 and err == ""       # all shown: nothing said
    code, out, err = run_in_process(["runs", "list", "--kind", "nosuch"])
    assert code == 0 and out.strip() == "no stored runs of kind 'nosuch'; kinds stored: demo", out
    code, out, err = run_in_process(["runs", "list", "--status", "failed"])
    assert code == 0 and out.strip() == "no stored runs of status 'failed'", out
