"""The watchdog names who stopped answering, and a launch that never starts is ended early."""

from __future__ import annotations

import os
import signal
import socket
import threading
import time
from pathlib import Path

import pytest
from cliutil import assert_one_line_error, run_cli

from rmax.errors import RmaxError
from rmax.launch import LaunchSpec, prepare, run_job
from rmax.launch.job import start_timeout
from rmax.native import executable


def _is_mine(pid: int) -> bool:
    """Whether pid descends from this test process (other jobs may run the same program)."""
    while pid > 1:
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError):
            return False
        if pid == os.getpid():
            return True
    return False


def _rank_pid(rank: int, program: str, timeout: float = 30) -> int:
    """The pid of the given MPI rank of program, started by this test, once it runs."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for entry in filter(str.isdigit, os.listdir("/proc")):
            try:
                cmd = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")[0]
                env = Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
            except OSError:
                continue
            if cmd.endswith(program.encode()) and f"OMPI_COMM_WORLD_RANK={rank}".encode() in env \
                    and _is_mine(int(entry)):
                return int(entry)
        time.sleep(0.1)
    raise AssertionError(f"rank {rank} of {program} never started")


@pytest.mark.parametrize("stop", [(1,), (0, 1)])
def test_timeout_names_the_ranks_that_stopped_and_their_host(stop):
    spec = LaunchSpec(program=[executable("rmax-net"), "p2p", "--layers", "mpi", "--budget", "60"], np=2)
    argv = prepare(spec, "mpirun")
    stopped = []
    measuring = threading.Event()

    def stop_ranks():
        pids = [_rank_pid(r, "rmax-net") for r in stop]
        measuring.wait(30)   # past their start-up, into the measurement
        for pid in pids:
            os.kill(pid, signal.SIGSTOP)
        stopped.extend(pids)

    t = threading.Thread(target=stop_ranks)
    t.start()
    # The timeout: the start-up, then a stopped rank's 4 s of silence (3 heartbeats and a second), with room.
    result = run_job(argv, timeout=8.5, env=spec.rank_env(), spec=spec,
                     on_step=lambda step: step.startswith("p2p") and measuring.set())
    t.join()
    assert stopped and result.timed_out
    message = str(result.failure("net"))
    host = socket.gethostname()
    assert [r.rank for r in result.silent] == list(stop) and set(result.ranks) == {0, 1}, message
    if stop == (1,):
        assert f"stopped answering: rank 1 on {host} (in step '" in message, message
        assert "rank 0" not in message, message
    else:
        assert f"all 2 ranks stopped answering: rank 0 on {host}" in message and f"rank 1 on {host}" in message
    assert _gone(stopped), stopped   # killed with the job


def _gone(pids, within: float = 5.0) -> bool:
    """Every pid ended (gone, or a zombie awaiting its reaper) within the grace the supervisor allows."""
    def alive(pid):
        try:
            return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
        except OSError:
            return False
    end = time.monotonic() + within
    while any(alive(p) for p in pids) and time.monotonic() < end:
        time.sleep(0.1)
    return not any(alive(p) for p in pids)


def test_a_rank_that_exited_is_not_taken_for_a_silent_one():
    # Three ranks as the kernels announce them: 0 keeps beating, 1 exits normally, 2 falls silent.
    script = ("echo 'rmax-step: start (rank 2 on h2)' >&2; echo 'rmax-alive: rank 2 on h2 every 0.20 s' >&2; "
              "echo 'rmax-step: start (rank 1 on h1)' >&2; "
              "echo 'rmax-exit: rank 1 on h1' >&2; echo 'rmax-step: exchange (rank 0 on h0)' >&2; "
              "while :; do echo 'rmax-alive: rank 0 on h0 every 0.20 s' >&2; sleep 0.2; done")
    spec = LaunchSpec(program=["/x/rmax-fake"], np=4)
    result = run_job(["sh", "-c", script], timeout=2.5, spec=spec)
    assert result.timed_out and [r.rank for r in result.silent] == [2]
    message = str(result.failure("demo"))
    assert "in step 'exchange'; stopped answering: rank 2 on h2 (in step 'start'); never heard from rank 3" in message
    assert "rank 1" not in message and "rank 0" not in message


def test_a_launch_that_never_starts_is_ended_at_the_start_deadline(monkeypatch):
    monkeypatch.setenv("RMAX_START_TIMEOUT", "2")
    # rmax refuses such a rank count before launching; the deadline is for what gets past that check.
    spec = LaunchSpec(program=[executable("rmax-node"), "stream"], np=100000, oversubscribe=True, bind="none")
    argv = prepare(LaunchSpec(program=spec.program, np=2, oversubscribe=True, bind="none"), "mpirun")
    argv[argv.index("-np") + 1] = str(spec.np)
    t0 = time.monotonic()
    result = run_job(argv, timeout=600, env=spec.rank_env(), spec=spec)
    assert time.monotonic() - t0 < 60
    assert result.not_started and not result.ok
    message = str(result.failure("stream"))
    assert message.startswith("stream did not start: mpirun started no rank within 2 s"), message


def test_start_deadline_default_scales_and_is_only_for_announcing_programs(monkeypatch):
    monkeypatch.delenv("RMAX_START_TIMEOUT", raising=False)
    assert start_timeout(LaunchSpec(program=["/x/rmax-net"], np=2)) == pytest.approx(60.002)
    assert start_timeout(LaunchSpec(program=["/x/rmax-hpl"], np=100000)) == pytest.approx(160)
    assert start_timeout(LaunchSpec(program=["/usr/bin/xhpl"], np=2)) is None   # announces nothing
    for bad in ("abc", "0", "-3", "nan", "inf"):
        monkeypatch.setenv("RMAX_START_TIMEOUT", bad)
        with pytest.raises(RmaxError, match="RMAX_START_TIMEOUT"):
            start_timeout(LaunchSpec(program=["/x/rmax-net"], np=2))


def test_bad_start_timeout_is_one_line_before_any_run(db):
    proc = run_cli("bench", "stream", "--size", "2MiB", env={"RMAX_START_TIMEOUT": "soon"})
    assert_one_line_error(proc, 2, "RMAX_START_TIMEOUT")
    assert not db.exists() or "stream" not in run_cli("runs", "list").stdout
