"""A host whose ranks stop their heartbeat is named lost within --lost-after, and the job is stopped;
a launcher's start-up failure always gives its cause."""

from __future__ import annotations

import time

import pytest
from cliutil import assert_one_line_error, run_cli

from rmax.launch import LaunchSpec, prepare, run_job
from rmax.launch.job import HostsLost, JobResult

# Ranks as the kernels announce them (rmx_lifeline.c): h1 holds ranks 0 and 1 and beats on;
# h2's rank 2 beats a few times, then its host falls silent (the script goes on, as a rank
# blocked in MPI would: only the heartbeat stops).
BEATS = ("echo 'rmax-step: start (rank {r} on {h})' >&2; ")
SCRIPT = (BEATS.format(r=0, h="h1") + BEATS.format(r=1, h="h1") + BEATS.format(r=2, h="h2") +
          "for i in 1 2 3; do echo 'rmax-alive: rank 2 on h2 every 0.20 s' >&2; sleep 0.2; done; "
          "echo 'rmax-step: exchange (rank 0 on h1)' >&2; "
          "while :; do echo 'rmax-alive: rank 0 on h1 every 0.20 s' >&2; "
          "echo 'rmax-alive: rank 1 on h1 every 0.20 s' >&2; sleep 0.2; done")


def _run(script: str, monkeypatch, lost_after: str = "1") -> tuple[JobResult, float]:
    monkeypatch.setenv("RMAX_LOST_AFTER", lost_after)
    spec = LaunchSpec(program=["sh", "-c", script], np=1)
    t0 = time.monotonic()
    result = run_job(prepare(spec, "local"), timeout=60, spec=spec)
    return result, time.monotonic() - t0


def test_a_host_that_stops_its_heartbeat_is_named_lost_and_the_job_stopped(monkeypatch):
    result, took = _run(SCRIPT, monkeypatch)
    assert took < 20, took                 # long before the 60 s timeout
    assert not result.ok and not result.timed_out and set(result.lost) == {2}
    err = result.failure("demo")
    assert isinstance(err, HostsLost) and err.hosts == ["h2"]
    message = str(err)
    assert message.startswith("demo failed after ") and "in step 'exchange'" in message, message
    assert "host h2 lost: no heartbeat from rank 2 for " in message and "h1" not in message, message


def test_a_silent_rank_on_a_host_that_still_answers_is_named_as_a_rank(monkeypatch):
    # rank 1 stops (SIGSTOP, say) while rank 0 on the same host, and h2, beat on
    script = (BEATS.format(r=0, h="h1") + BEATS.format(r=1, h="h1") + BEATS.format(r=2, h="h2") +
              "echo 'rmax-alive: rank 1 on h1 every 0.20 s' >&2; "
              "while :; do echo 'rmax-alive: rank 0 on h1 every 0.20 s' >&2; "
              "echo 'rmax-alive: rank 2 on h2 every 0.20 s' >&2; sleep 0.2; done")
    result, _ = _run(script, monkeypatch)
    err = result.failure("demo")
    message = str(err)
    assert set(result.lost) == {1} and err.hosts == [], message
    assert "rank 1 on h1 stopped answering: no heartbeat for " in message and "lost:" not in message, message


def test_lost_after_zero_turns_the_check_off(monkeypatch):
    monkeypatch.setenv("RMAX_LOST_AFTER", "0")
    spec = LaunchSpec(program=["sh", "-c", SCRIPT], np=1)
    result = run_job(prepare(spec, "local"), timeout=2, spec=spec)   # rank 2 silent from 0.6 s on
    assert result.timed_out and not result.lost


def test_a_bad_lost_after_is_one_line_before_any_run(db):
    assert_one_line_error(run_cli("launch", "check", "--np", "1", "--lost-after", "-1"), 2, "--lost-after")
    assert_one_line_error(run_cli("launch", "check", "--np", "1", env={"RMAX_LOST_AFTER": "nan"}), 2,
                          "RMAX_LOST_AFTER must be")
    assert not list(db.parent.glob("*.db")) or "launch-check" not in run_cli("runs", "list").stdout


def _failed(stderr: str) -> JobResult:
    return JobResult(argv=["mpirun", "x"], returncode=1, stdout="", stderr_tail=stderr.splitlines(), duration=1.0)


def test_a_launcher_message_ending_in_a_colon_gets_its_detail():
    frame = "-" * 70
    text = "\n".join([frame, "An internal error has occurred in ORTE:", "",
                      "[vm:123] FORCE-TERMINATE AT Not found:-13 - error plm_base_launch_support.c(598)", "",
                      "This is something that should be reported to the developers.", frame])
    message = str(_failed(text).failure("check"))
    assert message == ("check failed with exit status 1: An internal error has occurred in ORTE: "
                       "[vm:123] FORCE-TERMINATE AT Not found:-13 - error plm_base_launch_support.c(598)"), message


def test_a_launcher_message_with_nothing_after_its_colon_says_so_or_takes_the_next_error():
    frame = "-" * 70
    bare = [frame, "An internal error has occurred in ORTE:", "", "",
            "This is something that should be reported to the developers.", frame]
    message = str(_failed("\n".join(bare)).failure("check"))
    assert message.startswith("check failed with exit status 1: An internal error has occurred in ORTE: "
                              "(the launcher gave no detail"), message
    later = "[vm:9] ORTE_ERROR_LOG: The system limit on number of pipes a process can open was reached"
    message = str(_failed("\n".join([*bare, later])).failure("check"))
    assert message.endswith(later), message


# --- a family that measures many pairs keeps what it measured ---------------------------------

@pytest.fixture(scope="module")
def streams() -> dict[str, str]:
    """Real rmax-net ring and bisect output of 2 ranks (tiny budgets)."""
    from net.netutil import FAST, mpirun

    out = {}
    for name, args in (("ring", ["--random-rings", "2", "--bw-size", "1000"]), ("bisect", ["--size", "1000"])):
        proc = mpirun(2, name, "--json", "-", *FAST, *args)
        assert proc.returncode == 0, proc.stderr
        out[name] = proc.stdout
    return out


@pytest.mark.parametrize("name", ["ring", "bisect"])
def test_ring_and_bisect_parse_a_stream_cut_anywhere(streams, name):
    from rmax.families import get
    from rmax.bench.runner import parse_json_lines

    text, family = streams[name], get(name)
    whole = family.parse(parse_json_lines(text))
    assert whole.status == "ok" and whole.samples
    # a kill lands anywhere, mid-line too, short of the last line's closing brace (cut after it, the run ended)
    for cut in range(0, len(text.rstrip("\n")), max(1, len(text) // 97)):
        records = parse_json_lines(text[:cut])
        parsed = family.parse(records)
        assert parsed.status == "failed" and "stopped before its last" in parsed.error
        assert set(parsed.samples) <= set(whole.samples)
    measured = family.parse(parse_json_lines(text.rsplit('{"schema', 3)[0]))   # the last records lost
    s = measured.summary
    assert measured.samples and (s.natural_latency if name == "ring" else s.bandwidth_min), s


def test_a_run_whose_host_is_lost_is_stored_partial_with_what_it_measured(streams, db, tmp_path, monkeypatch):
    from rmax.families import get
    from rmax.bench.runner import run_kernel
    from rmax.store import open_store

    head = tmp_path / "head.jsonl"
    head.write_text("".join(streams["ring"].splitlines(keepends=True)[:5]))   # the header and four rings
    script = (f"cat {head}; " + BEATS.format(r=0, h="h1") + BEATS.format(r=1, h="h2") +
              "echo 'rmax-alive: rank 1 on h2 every 0.20 s' >&2; "
              "while :; do echo 'rmax-alive: rank 0 on h1 every 0.20 s' >&2; sleep 0.2; done")
    monkeypatch.setenv("RMAX_LOST_AFTER", "1")
    spec = LaunchSpec(program=["sh", "-c", script], np=1)
    with open_store() as store:
        with pytest.raises(HostsLost, match="host h2 lost: no heartbeat from rank 1"):
            run_kernel("ring", spec, {}, get("ring").parse, launcher="local", timeout=60, store=store)
        rec = store.list(kind="ring")[0]
    assert rec.status == "partial" and "host h2 lost" in rec.error and "kept" in rec.error
    assert rec.summary["natural_latency"] > 0 and len(rec.samples) == 4


def test_a_net_layer_past_its_time_budget_is_left_out_and_the_run_partial():
    from net.netutil import FAST, mpirun

    from rmax.families import get
    from rmax.bench.runner import parse_json_lines

    # 1 ms per layer: the first size of each layer is measured (with the samples it has when the
    # budget ends), the others are left out; the run goes on to the next layer and its end.
    proc = mpirun(2, "p2p", "--json", "-", *FAST, "--layers", "mpi,tcp", "--sizes", "1,2,4",
                  "--layer-budget", "0.001", "--repeats", "1")
    assert proc.returncode == 0, proc.stderr
    parsed = get("net").parse(parse_json_lines(proc.stdout))
    assert parsed.status == "partial", parsed.error
    assert parsed.summary.cut == ["mpi from 2 B in repeat 1", "tcp from 2 B in repeat 1"], parsed.summary.cut
    assert "left out mpi from 2 B in repeat 1; tcp from 2 B" in parsed.error
    assert [[p.size for p in layer.points] for layer in parsed.summary.layers] == [[1], [1]]
    assert all(p.validated and p.n >= 1 for layer in parsed.summary.layers for p in layer.points)


def test_a_silent_host_that_still_answers_a_launch_is_not_lost(monkeypatch):
    # The host's one rank stops beating (starved of CPU, say) but the host still starts a program
    # through the job's launcher: waited for, and the job ends as it would have.
    import socket

    from rmax.launch import Host

    me = socket.gethostname()
    script = (BEATS.format(r=0, h=me) + f"for i in 1 2 3; do echo 'rmax-alive: rank 0 on {me} every 0.20 s' >&2; "
              "sleep 0.2; done; sleep 4; echo done")
    monkeypatch.setenv("RMAX_LOST_AFTER", "1")
    argv = prepare(LaunchSpec(program=["sh", "-c", script], np=1), "local")
    # the job as mpirun would run it on this host: the silent host is asked through mpirun
    spec = LaunchSpec(program=["sh", "-c", script], np=1, hosts=[Host(me, 1)], launcher="mpirun")
    result = run_job(argv, timeout=60, spec=spec)
    assert result.ok and not result.lost and result.stdout.strip() == "done", result.failure("demo")


def test_the_survey_worker_passes_markers_on_as_its_own_rank():
    from rmax.survey.node_worker import as_rank

    assert as_rank(b"rmax-step: triad (rank 0 on n7)\n", 6) == b"rmax-step: triad (rank 6 on n7)\n"
    assert as_rank(b"rmax-alive: rank 0 on n7 every 1.00 s\n", 6) is None   # the worker beats for its node
    assert as_rank(b"rmax-exit: rank 0 on n7\n", 6) is None
    assert as_rank(b"rmax-node stream: error: --size too large\n", 6) == b"rmax-node stream: error: --size too large\n"


def test_a_drain_reason_is_readable_and_bounded():
    from rmax.launch.drain import REASON_MAX, reason_text, shown

    why = reason_text("lost in step 'memlat': no heartbeat for 15 s\nand no \"answer\"", "rmax survey")
    assert why == "lost in step 'memlat': no heartbeat for 15 s and no \"answer\" [rmax survey]"
    assert len(reason_text("x" * 500, "rmax survey")) <= REASON_MAX
    assert shown("n7", why).startswith("scontrol update NodeName=n7 State=DRAIN 'Reason=lost in step ")
