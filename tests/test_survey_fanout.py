"""A survey's per-node steps on every node at once (survey/fanout.py): the workers' frames split by
node and step and reassembled through a launcher's damage, each node stored as its own run (a failed
node named, the others kept), consecutive per-node steps in one launch, a node's failed step followed
by its next; and a survey missing a planned step is `partial`, exit status 3."""

import json
import random
import subprocess
import sys

from rmax.errors import RmaxError
from rmax.store import open_store
from rmax.survey.fanout import FanOut, NodeResult, SurveyRuns, Waiting, assign, store_per_node
from rmax.survey.frames import BLANK, BLOCK, FRAME, Reassembly, encode, stream
from rmax.survey import node_worker
from rmax.survey.node_worker import plan_arg
from rmax.survey.steps import Step
from rmax.survey.workflow import run_survey


def decode(text: str):
    """The results in a job's whole output by (rank, step), and those that came in part only."""
    got = Reassembly()
    got.feed(text)
    return got.results, got.broken()


def _result(n: int) -> dict:
    rng = random.Random(n)   # incompressible text: a result of several frames
    return {"rc": 0, "stdout": "".join(rng.choice("0123456789abcdef") for _ in range(6000)) + "\n", "error": None}


def _damaged(rank: int, host: str, result: dict) -> bytes:
    """One rank's output as Open MPI 4.1 was seen to forward it: the byte at the end of every 4 KiB lost."""
    data = b"".join(stream(encode(rank, host, result)))
    return b"".join(data[i:i + BLOCK - 1] for i in range(0, len(data), BLOCK))


def test_frames_come_back_whole_through_a_damaging_launcher():
    frames = encode(0, "n1", _result(0))
    assert len(frames) > 8 and all(len(f) == FRAME for f in frames)
    out = stream(frames)
    assert all(out[i] == BLANK for i in range(BLOCK // FRAME - 1, len(out), BLOCK // FRAME))
    a, b = _damaged(0, "n1", _result(0)), _damaged(1, "n2", _result(1))
    # the two ranks' output interleaved a frame at a time, with a launcher's own line among them
    mixed = b"".join(a[i:i + FRAME] + b[i:i + FRAME] for i in range(0, max(len(a), len(b)), FRAME))
    results, broken = decode(mixed.decode() + "mpirun: a warning of its own\n")
    assert broken == {} and results == {(0, 0): _result(0), (1, 0): _result(1)}


def test_each_step_is_whole_as_soon_as_its_frames_came():
    got = Reassembly()
    first, second = encode(0, "n1", _result(0), step=0), encode(0, "n1", _result(1), step=1)
    assert got.feed(b"".join(first[:-1]).decode()) == []            # not yet whole
    assert got.feed(b"".join(first[-1:] + second).decode()) == [(0, 0), (0, 1)]
    assert got.feed(b"".join(first).decode()) == []                 # the second copy adds nothing
    assert got.results == {(0, 0): _result(0), (0, 1): _result(1)} and got.broken() == {}


def test_a_result_missing_a_frame_is_reported_not_parsed():
    frames = encode(3, "n4", _result(3))
    cut = frames[:2] + [frames[2][:100] + b"\n"] + frames[3:]   # one frame cut, sent once
    results, broken = decode(b"".join(cut).decode())
    assert results == {} and broken == {(3, 0): "n4"}


def test_each_host_gets_its_own_ranks_result():
    hosts = ["a.example", "b", "c", "d", "e"]
    results = {0: {"host": "c", "rc": 0, "stdout": "C"},                   # named by its host name, not its rank
               1: {"host": "a", "rc": 0, "stdout": "A"},                   # by its short name
               2: {"host": "localhost", "rc": 0, "stdout": "?"},           # its place (c) is taken: nobody's
               4: {"host": "localhost", "rc": 2, "stdout": "", "error": "boom"}}   # by its place in the list
    got = assign(results, {3: "d"}, hosts, "sent no result")
    assert got["c"].stdout == "C" and got["a.example"].stdout == "A" and got["e"].error == "boom"
    assert got["b"].error == "sent no result" and "cut" in got["d"].error


def test_nodes_sharing_one_machine_share_its_memory():
    from types import SimpleNamespace

    from rmax.families import get
    from rmax.survey.fanout import fit_shared_memory

    o = get("stream").options(True)            # 128 MiB per array
    ctx = SimpleNamespace(facts={"sharing": 64, "mem_available": 22 * 2**30})
    assert fit_shared_memory(o, ctx).size == 88 * 2**20 and 3 * 64 * 88 * 2**20 < 22 * 2**30
    ctx.facts["sharing"] = 1                    # separate machines: each node's own memory
    assert fit_shared_memory(o, ctx) == o
    assert fit_shared_memory(get("oslat").options(True), SimpleNamespace(facts={"sharing": 64})) == \
        get("oslat").options(True)              # nothing sized by memory


def test_every_node_is_stored_as_its_own_run_and_a_failed_one_is_named(db):
    got = {"n1": NodeResult("n1", '{"x": 1}'), "n2": NodeResult("n2", error="timed out after 60 s"),
           "n3": NodeResult("n3", "not json")}

    def fill(run, res):
        try:
            run.update(summary=json.loads(res.stdout))
        except ValueError:
            raise RmaxError("printed no result") from None

    with open_store() as store:
        parent = store.start_run("survey")
        recs = store_per_node(store, parent.id, "stream", list(got), lambda: got, {"params": {"size": 1}}, fill)
        assert [(r.hosts, r.status, r.parent) for r in recs] == [(["n1"], "ok", parent.id), (["n2"], "failed", parent.id),
                                                                 (["n3"], "failed", parent.id)]
        assert recs[0].summary == {"x": 1} and recs[0].params == {"size": 1}
        assert recs[1].error == "n2: timed out after 60 s" and recs[2].error == "n3: printed no result"


def test_a_steps_runs_take_one_load_reading_at_their_start_and_one_at_their_end(db, monkeypatch):
    # each reading walks rmax's process tree: hundreds of processes during a fan-out of 64 nodes
    from rmax.inventory import load

    taken = []
    monkeypatch.setattr(load, "FRESH_S", 0.0)
    monkeypatch.setattr(load, "_read", lambda: taken.append(1) or load.Reading(len(taken), 0, 0, 0, 2, 0, 0, 0))
    got = {h: NodeResult(h, "{}") for h in ("n1", "n2", "n3")}
    with open_store() as store:
        parent = store.start_run("survey")
        before = len(taken)
        recs = store_per_node(store, parent.id, "stream", list(got), lambda: got, {}, lambda run, res: None)
        assert len(taken) - before == 2
        assert {r.load["start"]["load1"] for r in recs} == {before + 1}
        assert {r.load["end"]["load1"] for r in recs} == {before + 2}
        store.start_run("survey").finish("ok")   # outside: its own readings again
        assert len(taken) - before == 4


def test_nodes_whose_search_paths_differ_by_repeats_alone_share_the_machines_sections(monkeypatch):
    # Open MPI's daemons repeat their prefix on PATH once more than mpirun's own rank has it
    from rmax.inventory import shared

    monkeypatch.setenv("PATH", "/usr/bin:/a:/b")
    monkeypatch.setenv("LD_LIBRARY_PATH", "/usr/lib")
    key = shared.machine_key("survey-a")
    monkeypatch.setenv("PATH", "/usr/bin:/usr/bin:/a:/b:/a")
    monkeypatch.setenv("LD_LIBRARY_PATH", "/usr/lib:/usr/lib")
    assert shared.machine_key("survey-a") == key
    monkeypatch.setenv("PATH", "/usr/bin:/b:/a")            # another order finds other programs
    assert shared.machine_key("survey-a") != key


def test_the_staircases_statistics_are_scipys_welch_test_and_numpys_median():
    # written out (stats.py) so that parsing 64 nodes' staircases does not cost seconds of scipy calls
    import numpy as np
    from scipy import stats as scipy_stats

    from rmax.stats import differ_significantly, robust_sd

    rng = random.Random(7)
    for n in range(40):
        a = [rng.gauss(1.0, rng.random()) for _ in range(rng.randint(2, 20))]
        b = [rng.gauss(1.0 + rng.random(), rng.random()) for _ in range(rng.randint(2, 20))]
        p = scipy_stats.ttest_ind(a, b, equal_var=False).pvalue
        assert abs(differ_significantly(a, b)[1] - p) <= 1e-9 * p
        x = np.array(a + b)
        assert abs(robust_sd(x) - 1.4826 * np.median(np.abs(x - np.median(x)))) <= 1e-12
    assert differ_significantly([1.0, 1.0], [2.0, 2.0]) == (True, 0.0)
    assert np.isnan(robust_sd([])) and np.isnan(robust_sd([1.0, float("nan")]))


def test_an_interrupt_keeps_the_nodes_stored_before_it_and_ends_the_others_interrupted(db):
    got = {h: NodeResult(h, "{}") for h in ("n1", "n2", "n3")}

    def fill(run, res):
        run.update(summary={"host": res.host})
        if res.host == "n2":
            raise KeyboardInterrupt

    with open_store() as store:
        parent = store.start_run("survey")
        try:
            store_per_node(store, parent.id, "stream", list(got), lambda: got, {}, fill)
        except KeyboardInterrupt:
            pass
        runs = {r.hosts[0]: r for r in store.children(parent.id)}
        assert runs["n1"].status == "ok" and runs["n1"].summary == {"host": "n1"}
        assert runs["n2"].summary == {"host": "n2"}    # what it wrote is kept (one commit a node, not atomic)
        assert runs["n2"].status == runs["n3"].status == "interrupted"


def test_a_nodes_parser_reads_its_own_inventory_from_the_runs_read_once(db):
    from rmax.bench.family import RunContext
    from rmax.families.peakflops import cpu_facts
    from rmax.launch import Host, LaunchSpec

    with open_store() as store:
        survey = store.start_run("survey")
        for h, model in (("n1", "A"), ("n2", "B")):
            with store.start_run("info", parent=survey.id, hosts=[h]) as run:
                run.update(summary={"cpu": {"model": model}})
        runs = SurveyRuns(survey.id, store.children(survey.id))
    for h, model in (("n1", "A"), ("n2", "B")):   # the store is closed: only the runs read once are read
        ctx = RunContext(store=runs, parent=survey.id, spec=LaunchSpec(program=["x"], np=1, hosts=[Host(h, 1)]))
        assert cpu_facts(ctx) == {"model": model}
    assert runs.children("another survey") == []


def test_the_worker_reports_each_step_and_goes_on_after_a_failing_or_hung_one():
    plan = [{"step": "a", "timeout": 10, "argv": ["sh", "-c", "echo partial; echo 'kernel: error: no memory' >&2; exit 3"]},
            {"step": "b", "timeout": 0.5, "argv": ["sleep", "30"]},
            {"step": "c", "timeout": 5, "argv": ["/nonexistent/kernel"]},
            {"step": "d", "timeout": 5, "argv": ["sh", "-c", "echo $RMAX_X"], "env": {"RMAX_X": "its own"}}]
    worker = [sys.executable, "-I", "-S", node_worker.__file__]   # as fanout.py starts it: no site
    done = subprocess.run([*worker, "--plan", plan_arg(plan)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0   # it reported: a launcher must not end the other nodes
    got = {step: r for (_, step), r in decode(done.stderr)[0].items()}
    failed = got[0]   # passed on too
    assert failed["rc"] == 3 and failed["stdout"] == "partial\n" and failed["error"] == "kernel: error: no memory"
    assert got[1]["timed_out"] and got[1]["error"] == "timed out after 0.5 s"
    assert got[2]["error"].startswith("cannot run /nonexistent/kernel")
    assert got[3]["rc"] == 0 and got[3]["stdout"] == "its own\n"
    bad = subprocess.run([*worker, "--plan", "not-a-plan"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1


def test_a_waiting_worker_takes_the_steps_that_follow_from_its_file(tmp_path):
    """The "next" step: a node that sees the folder (its marker) waits there for the steps that
    follow, and runs them in the same launch; one that does not see it ends; [] ends the wait."""
    import threading

    worker = [sys.executable, "-I", "-S", node_worker.__file__]
    path = tmp_path / "next.json"
    (tmp_path / "next.json.wait").write_text("")
    plan = [{"step": "a", "timeout": 5, "argv": ["sh", "-c", "echo first"]},
            {"step": "next", "timeout": 20, "next": str(path)}]
    then = [{"step": "b", "timeout": 5, "argv": ["sh", "-c", "echo then"]}]
    later = threading.Timer(0.5, lambda: path.write_text(json.dumps(then)))
    later.start()
    done = subprocess.run([*worker, "--plan", plan_arg(plan)], capture_output=True, text=True, timeout=60)
    got = {step: r for (_, step), r in decode(done.stderr)[0].items()}
    assert [got[i]["stdout"] for i in range(3)] == ["first\n", "waiting", "then\n"]
    path.write_text("[]")
    done = subprocess.run([*worker, "--plan", plan_arg(plan)], capture_output=True, text=True, timeout=60)
    assert sorted(step for (_, step) in decode(done.stderr)[0]) == [0, 1]
    (tmp_path / "next.json.wait").unlink()   # the folder is not the surveying process's: no wait at all
    path.unlink()
    done = subprocess.run([*worker, "--plan", plan_arg(plan)], capture_output=True, text=True, timeout=10)
    got = {step: r for (_, step), r in decode(done.stderr)[0].items()}
    assert sorted(got) == [0, 1] and got[1]["stdout"] == ""


def test_the_per_node_steps_share_one_launch():
    from types import SimpleNamespace

    from rmax.survey.steps import all_steps, node_group

    steps = [s for s in all_steps() if s.name != "inventory"]
    group = node_group(steps, SimpleNamespace())
    assert [s.name for s in group] == ["peakflops", "cpurate", "memlat", "stream", "dgemm", "memcopy", "oslat"]
    assert node_group(steps[len(group):], SimpleNamespace()) == []      # then the network steps, HPL


class _Ok(Step):
    name, title = "ok-step", "a step that stores a run"

    def run(self, ctx):
        with ctx.store.start_run("marker", parent=ctx.survey_id, hosts=["n1"]) as run:
            pass
        return [ctx.store.get(run.id)]


class _Broken(Step):
    name, title = "net", "a planned step that fails"

    def run(self, ctx):
        raise RmaxError("mpirun could not reach n3")


class _NotHere(Step):
    name, title = "tune", "a step that does not apply"

    def skip_reason(self, ctx):
        return "no --tune budget given"

    def run(self, ctx):
        raise AssertionError("a skipped step ran")


def test_a_survey_missing_a_planned_step_is_partial_and_says_which(db):
    with open_store() as store:
        rec = run_survey(store, [_Ok(), _Broken(), _NotHere()])
        assert rec.status == "partial" and "net (mpirun could not reach n3)" in rec.error
        assert rec.summary["missing"] == [{"step": "net", "status": "failed", "why": "mpirun could not reach n3"}]
        assert run_survey(store, [_Ok(), _NotHere()]).status == "ok"      # not applicable is not missing
        assert run_survey(store, [_Broken()]).status == "failed"          # nothing measured


def test_the_cli_exits_3_on_a_partial_survey_and_says_so_first(db, tmp_path, monkeypatch):
    from click.testing import CliRunner

    from rmax.cli import survey as cli_survey
    from rmax.survey import steps

    monkeypatch.setattr(steps, "by_name", lambda names: [_Ok(), _Broken()])
    out = tmp_path / "report"
    got = CliRunner().invoke(cli_survey.command, ["--out", str(out)])
    assert isinstance(got.exception, RmaxError) and got.exception.exit_code == 3
    assert "partial" in str(got.exception)
    first = got.output.index("PARTIAL: planned steps missing: net (failed: mpirun could not reach n3)")
    assert first < got.output.index("; partial")    # above the summary's own title line
    html = (out / "index.html").read_text()
    assert html.index("PARTIAL: planned steps missing: net") < html.index("What limits this cluster")


def test_the_file_of_the_steps_that_follow_goes_when_the_launch_ends(tmp_path):
    """The waiting nodes' file (Waiting) is removed once the launch is over: every node read it."""
    import socket

    host = socket.gethostname()
    path = tmp_path / "next-1.json"
    (tmp_path / "next-1.json.wait").write_text("")
    plan = [{"step": "a", "timeout": 5, "argv": ["sh", "-c", "echo first"]},
            {"step": "next", "timeout": 20, "next": str(path)}]
    fan = FanOut(plan, [host], launcher="mpirun").start()
    assert fan.results(1)[host].stdout == "waiting"
    first = fan.extend([{"step": "b", "timeout": 5, "argv": ["sh", "-c", "echo then"]}])
    path.write_text(json.dumps([{"step": "b", "timeout": 5, "argv": ["sh", "-c", "echo then"]}]))
    assert fan.results(first)[host].stdout == "then\n"
    fan._thread.join(30)
    assert not fan._thread.is_alive() and not path.exists()


def test_a_release_after_the_launch_ended_leaves_no_file(tmp_path):
    """Nodes that gave up waiting (or died) ended their launch before the release wrote its file:
    nothing is left to remove it, so the release does."""
    import socket

    host = socket.gethostname()
    path = tmp_path / "next-2.json"
    (tmp_path / "next-2.json.wait").write_text("")
    plan = [{"step": "a", "timeout": 5, "argv": ["sh", "-c", "echo first"]},
            {"step": "next", "timeout": 0.5, "next": str(path)}]
    waiting = Waiting(path)
    waiting.fan = FanOut(plan, [host], launcher="mpirun").start()
    assert waiting.fan.results(1)[host].stdout == "waiting"
    waiting.fan.wait(30)
    assert waiting.fan.ended()
    waiting.release()
    assert not path.exists() and not (tmp_path / "next-2.json.wait").exists()
