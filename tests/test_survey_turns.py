"""Nodes of one machine taking turns at a per-node step (rmax.survey.turns, node_worker.in_turn):
one at a time, in (step, rank) order, a gone node's place skipped, a wait bounded, and a folder
that is not this user's alone refused."""

import json
import os
import signal
import subprocess
import sys
import threading
import time

from rmax.survey import node_worker, turns


def folder(tmp_path):
    fd = turns.ours(str(tmp_path / "private"))
    assert fd is not None
    return fd


def test_one_node_at_a_time_in_step_then_rank_order(tmp_path):
    fd = folder(tmp_path)
    held, order, lock = [], [], threading.Lock()

    def node(step, me):
        t = turns.Turn(fd, "k", step, me)
        assert t.take(until=time.monotonic() + 30)
        with t:
            with lock:
                held.append(1)
                assert len(held) == 1, "two nodes measure at once"
                order.append((step, me))
            time.sleep(0.05)
            with lock:
                held.pop()

    # rank 9 holds the seat while the others queue: then step 0's before step 1's, ranks in order
    first = turns.Turn(fd, "k", 0, 9)
    assert first.take(until=time.monotonic() + 5)
    threads = [threading.Thread(target=node, args=(step, me)) for step, me in [(1, 0), (0, 3), (0, 1), (1, 2)]]
    for t in threads:
        t.start()
    time.sleep(0.5)   # every one of them waits in line
    first.release()
    for t in threads:
        t.join(30)
    assert order == [(0, 1), (0, 3), (1, 0), (1, 2)]
    assert not [n for n in os.listdir(fd) if n.endswith(turns.ENTRY)]   # no one left in line


def test_a_node_gone_while_waiting_holds_no_one_up(tmp_path):
    fd = folder(tmp_path)
    holder = turns.Turn(fd, "k", 0, 5)
    assert holder.take(until=time.monotonic() + 5)
    # rank 0 enters the line in a process of its own, which is then killed: its entry stays, unlocked
    code = ("import sys, time; sys.path[:0] = %r; from rmax.survey import turns; "
            "fd = turns.ours(%r); t = turns.Turn(fd, 'k', 0, 0); t.take(time.monotonic() + 60)") % (
        sys.path, str(tmp_path / "private"))
    gone = subprocess.Popen([sys.executable, "-c", code])
    for _ in range(200):
        if any(n.endswith(turns.ENTRY) for n in os.listdir(fd)):
            break
        time.sleep(0.02)
    gone.send_signal(signal.SIGKILL)
    gone.wait()
    assert any(n.endswith(turns.ENTRY) for n in os.listdir(fd))
    holder.release()
    start = time.monotonic()
    t = turns.Turn(fd, "k", 0, 1)
    assert t.take(until=start + 5) and time.monotonic() - start < 1.0
    t.release()


def test_a_wait_ends_at_its_time(tmp_path):
    fd = folder(tmp_path)
    holder = turns.Turn(fd, "k", 0, 0)
    assert holder.take(until=time.monotonic() + 5)
    start = time.monotonic()
    assert not turns.Turn(fd, "k", 0, 1).take(until=start + 0.3)
    assert 0.3 <= time.monotonic() - start < 1.5
    # another launch's line (another key) is its own
    other = turns.Turn(fd, "j", 0, 1)
    assert other.take(until=time.monotonic() + 1)
    other.release()
    holder.release()


def test_a_folder_not_ours_alone_is_refused(tmp_path):
    open_one = tmp_path / "open"
    open_one.mkdir(mode=0o755)
    open_one.chmod(0o755)
    assert turns.ours(str(open_one)) is None
    (tmp_path / "link").symlink_to(tmp_path / "private")
    turns.ours(str(tmp_path / "private"))
    assert turns.ours(str(tmp_path / "link")) is None


def test_the_worker_runs_its_program_in_its_turn_and_says_when_it_had_none(tmp_path):
    item = {"step": "echo", "timeout": 2.0, "argv": [sys.executable, "-c", "print('measured')"],
            "turn": {"folder": str(tmp_path / "private"), "key": "k", "run": 1.0, "of": 2}}
    got = node_worker.in_turn(item, 0, 0, 2.0)
    assert got["rc"] == 0 and got["stdout"].strip() == "measured" and "waited" in got
    fd = folder(tmp_path)
    holder = turns.Turn(fd, "k", 0, 9)
    assert holder.take(until=time.monotonic() + 5)
    got = node_worker.in_turn(item, 0, 1, 2.0)   # the seat held past its wait (2 s less its 1 s run)
    holder.release()
    assert got["rc"] is None and got["stdout"] == "" and "had no turn within 1 s" in got["error"]
    assert "the 2 nodes of its machine take turns" in got["error"]
    # a folder that is not this user's alone: the program runs at once, not in turns
    bad = tmp_path / "shared"
    bad.mkdir(mode=0o777)
    bad.chmod(0o777)
    got = node_worker.in_turn({**item, "turn": {**item["turn"], "folder": str(bad)}}, 0, 0, 2.0)
    assert got["rc"] == 0 and "waited" not in got
    json.dumps(got)   # a result the worker can frame


def test_old_files_are_swept(tmp_path):
    fd = folder(tmp_path)
    t = turns.Turn(fd, "old", 0, 0)
    assert t.take(until=time.monotonic() + 1)
    t.release()
    assert "old.seat" in os.listdir(fd)
    turns.sweep(fd, now=time.time() + turns.KEEP_S + 10)
    assert "old.seat" not in os.listdir(fd)
