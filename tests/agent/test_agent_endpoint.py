"""The agent's endpoint cannot be tied up: idle connections are closed within the deadline, the
connection bound pushes out the oldest, and scrapes are answered while idle sockets are open, all
on one thread. Small numbers and a 1 s deadline: about 3 s. (Load: bench/agent_endpoint.) What it
serves: metrics named by their units, the agent's state and why it waits, and the same metrics
written whole to the textfile for node_exporter."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import pytest

from rmax.agent.endpoint import Endpoint, answer
from rmax.agent.metrics import AgentState
from rmax.agent.promfile import PromFile
from rmax.errors import RmaxError

DEADLINE = 1.0


def closed_within(sock: socket.socket, seconds: float) -> bool:
    """Whether the server closed the connection (end of file or reset) within `seconds`."""
    sock.settimeout(seconds)
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def test_idle_connections_are_dropped_and_scrapes_still_answered():
    state = AgentState("node1")
    # the threads the endpoint started: counted by identity, since a thread of an earlier test (a
    # store's lease keeper) may end meanwhile and a plain count would drop with it
    before = set(threading.enumerate())

    def started() -> int:
        return sum(1 for t in threading.enumerate() if t not in before)

    ep = Endpoint(("127.0.0.1", 0), lambda: state.pages, deadline=DEADLINE, max_connections=16)
    url = f"http://127.0.0.1:{ep.server_address[1]}"
    try:
        assert started() == 1       # one thread, whatever the load
        start = time.monotonic()
        idle = [socket.create_connection(ep.server_address) for _ in range(12)]
        # a slow client that never finishes its request is dropped too
        idle[0].sendall(b"GET /metrics HTTP/1.1\r\n")

        def scrape(_):
            with urllib.request.urlopen(url + "/metrics", timeout=5) as r:
                return r.status, r.read()

        with ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(scrape, range(24)))
        assert all(code == 200 and b"rmax_agent_info" in body for code, body in answers)
        assert started() == 1
        margin = 3.0       # a loaded 2-core machine: the deadline plus scheduling delay
        assert all(closed_within(s, max(0.1, DEADLINE + margin - (time.monotonic() - start))) for s in idle)
        assert time.monotonic() - start < DEADLINE + margin
        assert ep.open_connections == 0

        # beyond the bound, a new connection pushes out the oldest at once
        flood = [socket.create_connection(ep.server_address) for _ in range(20)]
        assert closed_within(flood[0], 0.5) and not closed_within(flood[-1], 0.05)
        assert scrape(0)[0] == 200
        assert ep.open_connections <= 16
        for s in idle + flood:
            s.close()
    finally:
        ep.shutdown()
        ep.server_close()


def test_answers_come_from_the_rendered_pages():
    state = AgentState("node1")
    state.update(sets=3)
    assert b"rmax_agent_probe_sets_total 3.0" in answer(b"GET /metrics?x=1 HTTP/1.1\r\nHost: a", state.pages)
    assert answer(b"GET /nowhere HTTP/1.1", state.pages).startswith(b"HTTP/1.1 404 ")
    assert answer(b"POST /metrics HTTP/1.1", state.pages).startswith(b"HTTP/1.1 405 ")
    # HEAD (curl -I, an up-check): GET's head, its length, no body
    got, head = answer(b"GET /metrics HTTP/1.1", state.pages), answer(b"HEAD /metrics HTTP/1.1", state.pages)
    assert head.startswith(b"HTTP/1.1 200 ") and head.endswith(b"\r\n\r\n") and got.startswith(head)
    assert f"Content-Length: {len(got) - len(head)}".encode() in head
    assert answer(b"\x16\x03\x01 garbage", state.pages).startswith(b"HTTP/1.1 400 ")


def rate(probe: str, peer: str, unit: str, statistic: str, latest: float, state: str = "steady") -> dict:
    """One rate of a node view (rmax.agent.view.node_view) with a baseline 10 % away from it."""
    return {"probe": probe, "peer": peer, "unit": unit, "statistic": statistic, "latest": latest,
            "baseline": latest * 1.1, "noise": latest * 0.01, "deviation": 1 / 1.1 - 1, "p_value": 0.2,
            "state": state, "n_baseline": 8, "last_probe_at": 1.7e9}


def test_metrics_name_their_units_and_show_why_the_idle_gate_stays_shut():
    from rmax.agent.config import build
    from rmax.agent.idle import Reading

    state = AgentState("node1", build({}, {"max_load": 0.5}))
    assert b'rmax_agent_state{state="starting"} 1.0' in state.pages["/metrics"][1]
    state.update(view={"host": "node1", "rates": [
        rate("dgemm", "", "flops_per_second", "median", 9e10, "drift"),
        rate("stream_triad", "", "bytes_per_second", "best", 2e10),
        rate("memory_latency", "", "seconds", "min", 9e-8, "learning"),
        rate("pingpong_latency", "node2", "seconds", "median", 2e-6)]})
    state.look(Reading(13.0, [], "load of other processes 13.00 >= max_load 0.5", "load"))
    text = state.pages["/metrics"][1].decode()
    for line in ['rmax_probe_flops_per_second{peer="",probe="dgemm",statistic="median"} 9e+10',
                 'rmax_probe_bytes_per_second{peer="",probe="stream_triad",statistic="best"} 2e+10',
                 'rmax_probe_latency_seconds{peer="node2",probe="pingpong_latency",statistic="median"} 2e-06',
                 'rmax_probe_state{peer="",probe="dgemm",state="drift"} 1.0',
                 'rmax_probe_state{peer="",probe="memory_latency",state="learning"} 1.0',
                 'rmax_agent_state{state="busy"} 1.0', 'rmax_agent_busy_reason{reason="load"} 1.0',
                 'rmax_agent_load 13.0', 'rmax_agent_max_load 0.5', 'rmax_agent_busy_looks_total{reason="load"} 1.0']:
        assert line + "\n" in text, line
    assert "rmax_rate" not in text and 'unit="' not in text     # the unit is in each metric's name
    if shutil.which("promtool"):
        check = subprocess.run(["promtool", "check", "metrics"], input=text.encode(), capture_output=True, timeout=30)
        assert check.returncode == 0 and not check.stdout.strip(), check.stdout + check.stderr
    state.look(Reading(0.0, [], None))
    text = state.pages["/metrics"][1].decode()
    assert 'rmax_agent_state{state="idle"} 1.0' in text and 'rmax_agent_busy_reason{reason="load"} 0.0' in text
    assert 'rmax_agent_busy_looks_total{reason="load"} 1.0' in text


def test_the_textfile_is_replaced_whole_and_a_missing_folder_refused(tmp_path):
    said = []
    with pytest.raises(RmaxError, match="does not exist"):
        PromFile(str(tmp_path / "missing"), said.append)
    out = PromFile(str(tmp_path), said.append)
    state = AgentState("node1", on_render=out.write)
    first = (tmp_path / "rmax.prom").stat().st_ino
    state.update(sets=1)
    assert (tmp_path / "rmax.prom").stat().st_ino != first       # a new file renamed in, not rewritten
    assert b"rmax_agent_probe_sets_total 1.0" in (tmp_path / "rmax.prom").read_bytes()
    assert os.listdir(tmp_path) == ["rmax.prom"] and not said
