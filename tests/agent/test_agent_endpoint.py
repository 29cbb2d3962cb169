"""The agent's endpoint cannot be tied up: idle connections are closed within the deadline, the
connection bound pushes out the oldest, and scrapes are answered while idle sockets are open, all
on one thread. Small numbers and a 1 s deadline: about 3 s. (Load: bench/agent_endpoint.)"""

from __future__ import annotations

import socket
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

from rmax.agent.endpoint import Endpoint, answer
from rmax.agent.metrics import AgentState

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
    assert answer(b"\x16\x03\x01 garbage", state.pages).startswith(b"HTTP/1.1 400 ")
