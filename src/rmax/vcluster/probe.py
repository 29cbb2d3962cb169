"""A small TCP probe between the nodes of a virtual cluster: 1-byte ping-pong
latency and a timed bulk transfer, for every pair of nodes.

It needs no MPI and no native kernel, so the cluster can check its own
shaping and `rmax topology infer` has measured data even where the MPI
network benchmarks are not built. Servers bind to the node addresses the
cluster created, never to the host's interfaces.

Run as `python -m rmax.vcluster.probe serve ADDR PORT` or
`... client PORT BYTES PINGS ADDR...` inside a node's namespace."""

from __future__ import annotations

import json
import os
import random
import socket
import statistics
import struct
import subprocess
import sys
import time

from rmax.errors import RmaxError

CHUNK = 1 << 16


def _recv_exact(s: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        got = s.recv(n - len(buf))
        if not got:
            raise ConnectionError("peer closed")
        buf += got
    return bytes(buf)


def serve(addr: str, port: int, lifetime: float) -> None:
    """Answer probes until lifetime seconds pass: 'p' = echo bytes, 'b' + size = swallow and acknowledge."""
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((addr, port))
    ls.listen(16)
    print("ready", flush=True)
    deadline = time.monotonic() + lifetime
    while time.monotonic() < deadline:
        ls.settimeout(max(0.1, deadline - time.monotonic()))
        try:
            c, _ = ls.accept()
        except socket.timeout:
            break
        with c:
            c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            c.settimeout(30)
            try:
                kind = _recv_exact(c, 1)
                if kind == b"p":
                    while True:
                        b = c.recv(1)
                        if not b:
                            break
                        c.sendall(b)
                elif kind == b"b":
                    (size,) = struct.unpack("!Q", _recv_exact(c, 8))
                    left = size
                    while left:
                        got = c.recv(min(CHUNK * 4, left))
                        if not got:
                            break
                        left -= len(got)
                    c.sendall(struct.pack("!Q", size - left))
            except (ConnectionError, OSError):
                continue


def ping(addr: str, port: int, pings: int) -> list[float]:
    """One-way latency samples (half of each round trip), after 10% warm-up."""
    with socket.create_connection((addr, port), timeout=10) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.sendall(b"p")
        out = []
        for i in range(pings + max(1, pings // 10)):
            t = time.perf_counter()
            s.sendall(b"x")
            _recv_exact(s, 1)
            if i >= max(1, pings // 10):
                out.append((time.perf_counter() - t) / 2)
    return out


def bulk(addr: str, port: int, size: int) -> float:
    """Bytes/s of one transfer of size bytes, timed until the receiver acknowledges all of it."""
    payload = os.urandom(CHUNK)
    with socket.create_connection((addr, port), timeout=30) as s:
        s.sendall(b"b" + struct.pack("!Q", size))
        t = time.perf_counter()
        left = size
        while left:
            n = min(CHUNK, left)
            s.sendall(payload[:n])
            left -= n
        (got,) = struct.unpack("!Q", _recv_exact(s, 8))
        dt = time.perf_counter() - t
    if got != size:
        raise ConnectionError(f"receiver got {got} of {size} bytes")
    return size / dt


def client(port: int, size: int, pings: int, addrs: list[str]) -> list[dict]:
    out = []
    for a in addrs:
        lat = ping(a, port, pings)
        out.append({"to": a, "latency_s": statistics.median(lat), "latency_samples": lat,
                    "bandwidth_Bps": bulk(a, port, size)})
    return out


# ---- orchestration from the host side ---------------------------------------------------------------

def _in_node(state, node: str, args: list[str]) -> list[str]:
    return [*state.enter(node), sys.executable, "-m", "rmax.vcluster.probe", *args]


def measure_matrix(state, nodes: list[str] | None = None, size: int = 4_000_000, pings: int = 200,
                   timeout: float = 120.0) -> dict:
    """All-pairs latency (median one-way, s) and bandwidth (bytes/s) between the given nodes.

    One probe server per node and one client per node (measuring every node after
    it), one client at a time, so that transfers never compete for the trunks."""
    plan = state.plan
    names = nodes or [n.name for n in plan.nodes]
    addr = {n.name: n.address for n in plan.nodes}
    for n in names:
        if n not in addr:
            raise RmaxError(f"virtual cluster '{plan.name}' has no node '{n}'")
    port = random.randint(20000, 60000)
    servers = [subprocess.Popen(_in_node(state, n, ["serve", addr[n], str(port), str(timeout)]),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for n in names]
    k = len(names)
    lat = [[0.0 if i == j else None for j in range(k)] for i in range(k)]
    bw = [[None] * k for _ in range(k)]
    samples = {}
    try:
        for s in servers:
            line = s.stdout.readline()
            if line.strip() != "ready":
                raise RmaxError("a probe server did not start: " + (s.stderr.read().strip().splitlines() or ["?"])[-1])
        for i, n in enumerate(names[:-1]):
            targets = names[i + 1:]
            proc = subprocess.run(_in_node(state, n, ["client", str(port), str(size), str(pings),
                                                      *(addr[t] for t in targets)]),
                                  capture_output=True, text=True, timeout=timeout)
            if proc.returncode != 0:
                raise RmaxError(f"probe from {n} failed: " + (proc.stderr.strip().splitlines() or ["?"])[-1])
            for j, r in zip(range(i + 1, k), json.loads(proc.stdout)):
                lat[i][j] = lat[j][i] = r["latency_s"]
                bw[i][j] = bw[j][i] = r["bandwidth_Bps"]
                samples[f"{n}->{names[j]}"] = r["latency_samples"]
    finally:
        for s in servers:
            s.kill()
            s.wait()
    return {"hosts": names, "latency_s": lat, "bandwidth_Bps": bw, "latency_statistic": "median one-way",
            "bandwidth_statistic": f"one {size}-byte TCP transfer", "bytes": size, "pings": pings,
            "samples": samples}


def main(argv: list[str]) -> int:
    if argv and argv[0] == "serve" and len(argv) == 4:
        serve(argv[1], int(argv[2]), float(argv[3]))
        return 0
    if argv and argv[0] == "client" and len(argv) >= 5:
        print(json.dumps(client(int(argv[1]), int(argv[2]), int(argv[3]), argv[4:])))
        return 0
    print("usage: probe serve ADDR PORT LIFETIME | probe client PORT BYTES PINGS ADDR...", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
