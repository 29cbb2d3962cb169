"""The agent's HTTP endpoint: one thread running one selector loop that answers GET (and HEAD) requests
from pages rendered beforehand, so that no client can tie it up.

A thread per connection (http.server) let 500 idle connections hold 500 threads, and 100
scrapers queue behind a listen backlog of 5. Here every connection costs a few KiB and no
thread, and the limits below are documented in docs/AGENT.md:

- DEADLINE: from its accept, a connection has this long to send its request and take the whole
  answer; then it is closed, whatever it is doing (a slow or idle client is dropped).
- MAX_CONNECTIONS open at once: one more closes the oldest, so a flood of idle sockets cannot
  keep a scraper out; it only shortens the time each of them is held.
- BACKLOG: connections the kernel holds before they are accepted (Prometheus's fan-in).
- MAX_REQUEST: bytes of request line and headers; more is answered 431 and closed."""

from __future__ import annotations

import selectors
import socket
import threading
import time
from collections import OrderedDict
from typing import Callable

DEADLINE = 5.0
MAX_CONNECTIONS = 256
BACKLOG = 128
MAX_REQUEST = 8192
ACCEPTS_PER_TURN = 64     # accepted before the loop serves the connections it holds again

Pages = dict[str, tuple[str, bytes]]     # path -> (content type, body)
REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed",
           431: "Request Header Fields Too Large"}


def response(code: int, ctype: str, body: bytes, head_only: bool = False) -> bytes:
    """The response; to a HEAD request (head_only) its head alone, Content-Length that of the body
    a GET would get (RFC 9110 9.3.2), as monitoring's up-checks (curl -I) expect."""
    head = (f"HTTP/1.1 {code} {REASONS[code]}\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\n"
            + ("Allow: GET, HEAD\r\n" if code == 405 else "") + "Connection: close\r\n\r\n")
    return head.encode() + (b"" if head_only else body)


def _plain(code: int, head_only: bool = False) -> bytes:
    return response(code, "text/plain; charset=utf-8", f"{REASONS[code].lower()}\n".encode(), head_only)


def answer(request: bytes, pages: Pages) -> bytes:
    """The whole response to a request's head (request line and headers)."""
    parts = request.split(b"\r\n", 1)[0].split(b" ")
    if len(parts) != 3 or not parts[2].startswith(b"HTTP/"):
        return _plain(400)
    if parts[0] not in (b"GET", b"HEAD"):
        return _plain(405)
    head_only = parts[0] == b"HEAD"
    page = pages.get(parts[1].split(b"?", 1)[0].decode("latin-1"))
    return response(200, *page, head_only=head_only) if page else _plain(404, head_only)


class _Conn:
    __slots__ = ("sock", "deadline", "inbox", "out")

    def __init__(self, sock: socket.socket, deadline: float):
        self.sock, self.deadline = sock, deadline
        self.inbox = bytearray()
        self.out: memoryview | None = None      # set once the request is read: what is left to send


class Endpoint:
    """Serves `pages()` (read at each request, so a new rendering is served at once) in a thread."""

    def __init__(self, address: tuple[str, int], pages: Callable[[], Pages], deadline: float = DEADLINE,
                 max_connections: int = MAX_CONNECTIONS):
        family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        self._listener = socket.create_server(address, family=family, backlog=BACKLOG)
        self._listener.setblocking(False)
        self.server_address = self._listener.getsockname()
        self._pages, self._deadline, self._max = pages, deadline, max_connections
        self._conns: OrderedDict[socket.socket, _Conn] = OrderedDict()    # oldest first: deadline order
        self._sel = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._sel.register(self._listener, selectors.EVENT_READ, "listen")
        self._sel.register(self._wake_r, selectors.EVENT_READ, "wake")
        self._stop = False
        self._thread = threading.Thread(target=self._loop, name="rmax-agent-http", daemon=True)
        self._thread.start()

    @property
    def open_connections(self) -> int:
        return len(self._conns)

    def shutdown(self) -> None:
        self._stop = True
        self._wake_w.send(b"x")
        self._thread.join()

    def server_close(self) -> None:
        for conn in list(self._conns.values()):
            self._close(conn)
        for s in (self._listener, self._wake_r, self._wake_w):
            s.close()
        self._sel.close()

    def _loop(self) -> None:
        while not self._stop:
            first = next(iter(self._conns.values()), None)
            timeout = None if first is None else max(0.0, first.deadline - time.monotonic())
            for key, _ in self._sel.select(timeout):
                if key.data == "listen":
                    self._accept()
                elif key.data != "wake":
                    self._serve(key.data)
            now = time.monotonic()
            while self._conns and next(iter(self._conns.values())).deadline <= now:
                self._close(next(iter(self._conns.values())))

    def _accept(self) -> None:
        for _ in range(ACCEPTS_PER_TURN):
            try:
                sock, _ = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:     # out of descriptors: free one, or the listener stays ready and the loop spins
                if self._conns:
                    self._close(next(iter(self._conns.values())))
                return
            if len(self._conns) >= self._max:
                self._close(next(iter(self._conns.values())))
            sock.setblocking(False)
            conn = _Conn(sock, time.monotonic() + self._deadline)
            self._conns[sock] = conn
            self._sel.register(sock, selectors.EVENT_READ, conn)

    def _serve(self, conn: _Conn) -> None:
        try:
            if conn.out is None:
                data = conn.sock.recv(4096)
                if not data:
                    self._close(conn)
                    return
                conn.inbox += data
                end = conn.inbox.find(b"\r\n\r\n")
                if end < 0 and len(conn.inbox) <= MAX_REQUEST:
                    return
                reply = answer(bytes(conn.inbox[:end]), self._pages()) if 0 <= end <= MAX_REQUEST else _plain(431)
                conn.out = memoryview(reply)
                self._sel.modify(conn.sock, selectors.EVENT_WRITE, conn)
            conn.out = conn.out[conn.sock.send(conn.out):]
            if not conn.out:
                self._close(conn)
        except (BlockingIOError, InterruptedError):
            pass
        except OSError:         # reset by the client: nothing to answer
            self._close(conn)

    def _close(self, conn: _Conn) -> None:
        self._conns.pop(conn.sock, None)
        try:
            self._sel.unregister(conn.sock)
        except (KeyError, ValueError):
            pass
        conn.sock.close()
