"""The agent's Prometheus endpoint: text-format metrics from a registry of its own (never the
global default), built at each scrape from the latest published view, plus the same view as
JSON for `rmax agent fleet`.

Routes: /metrics (Prometheus text format), /rates.json (the node view), / (a short index)."""

from __future__ import annotations

import json
import math
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from socketserver import TCPServer

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from rmax import __version__
from rmax.errors import RmaxError


class AgentState:
    """What the metrics show: the node view (replaced whole after every probe, so a scrape never
    sees half an update) and the agent's own live state."""

    def __init__(self, host: str):
        self.host = host
        self.view: dict = {"host": host, "rates": []}
        self.idle: bool | None = None
        self.load: float | None = None
        self.busy_reason: str | None = None
        self.probing: str | None = None
        self.sets = 0
        self.probes: dict[tuple[str, str], int] = {}    # (probe, status) -> count since start
        self._lock = threading.Lock()

    def count(self, probe: str, status: str) -> None:
        with self._lock:
            self.probes[(probe, status)] = self.probes.get((probe, status), 0) + 1

    def live(self) -> dict:
        with self._lock:
            probes = dict(self.probes)
        return {"idle": self.idle, "load": self.load, "busy_reason": self.busy_reason, "probing": self.probing,
                "sets": self.sets, "probes": [{"probe": p, "status": s, "count": n} for (p, s), n in probes.items()]}


def _num(x) -> float:
    return math.nan if x is None else float(x)


class AgentCollector(Collector):
    def __init__(self, state: AgentState):
        self.state = state

    def collect(self):
        view, live = self.state.view, self.state.live()
        keys = ["probe", "peer"]
        rate = GaugeMetricFamily("rmax_rate", "Latest measured value of a rate (unit and statistic in the labels)",
                                 labels=[*keys, "statistic", "unit"])
        per_rate = {
            "baseline": GaugeMetricFamily("rmax_rate_baseline", "Median of the node's own earlier values of the rate "
                                          "(NaN before there are any)",
                                          labels=[*keys, "unit"]),
            "noise": GaugeMetricFamily("rmax_rate_noise", "Robust spread (1.4826 x MAD) of the baseline values",
                                       labels=[*keys, "unit"]),
            "deviation": GaugeMetricFamily("rmax_rate_deviation_ratio", "Latest value / baseline - 1", labels=keys),
            "drift": GaugeMetricFamily("rmax_rate_drift", "1 when the recent values are significantly worse than "
                                       "the baseline (one-sided Mann-Whitney U test), 0 when tested and not; NaN "
                                       "while learning (no verdict yet)", labels=keys),
            "p_value": GaugeMetricFamily("rmax_rate_drift_p_value", "p-value of the drift test (NaN while learning)",
                                         labels=keys),
            "n_baseline": GaugeMetricFamily("rmax_rate_baseline_samples", "Number of values in the baseline",
                                            labels=keys),
            "last_probe_at": GaugeMetricFamily("rmax_rate_last_probe_timestamp_seconds",
                                               "Unix time the latest value was measured", labels=keys),
        }
        for r in view["rates"]:
            k = [r["probe"], r["peer"]]
            rate.add_metric([*k, r["statistic"], r["unit"]], _num(r["latest"]))
            for field, fam in per_rate.items():
                value = (float(r[field]) if r["state"] != "learning" else math.nan) if field == "drift" else _num(r[field])
                fam.add_metric([*k, r["unit"]] if field in ("baseline", "noise") else k, value)
        yield rate
        yield from per_rate.values()
        info = GaugeMetricFamily("rmax_agent_info", "The agent and the node it measures", labels=["host", "version"])
        info.add_metric([self.state.host, __version__], 1.0)
        yield info
        yield GaugeMetricFamily("rmax_agent_idle", "1 when the node is idle enough to probe (NaN before the first "
                                "look)", value=_num(live["idle"]))
        yield GaugeMetricFamily("rmax_agent_load", "Runnable tasks of other processes, averaged over the window",
                                value=_num(live["load"]))
        yield GaugeMetricFamily("rmax_agent_probing", "1 while a probe runs", value=float(live["probing"] is not None))
        sets = CounterMetricFamily("rmax_agent_probe_sets", "Complete probe sets since the agent started")
        sets.add_metric([], live["sets"])
        yield sets
        probes = CounterMetricFamily("rmax_agent_probes", "Probes since the agent started, by final status",
                                     labels=["probe", "status"])
        for p in live["probes"]:
            probes.add_metric([p["probe"], p["status"]], p["count"])
        yield probes


def _handler(registry: CollectorRegistry, state: AgentState):
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
                self._send(200, CONTENT_TYPE_LATEST, generate_latest(registry))
            elif path == "/rates.json":
                body = json.dumps({**state.view, "agent": state.live()}, allow_nan=False, default=str)
                self._send(200, "application/json", body.encode())
            elif path == "/":
                self._send(200, "text/plain; charset=utf-8",
                           f"rmax agent on {state.host}: /metrics (Prometheus), /rates.json\n".encode())
            else:
                self._send(404, "text/plain; charset=utf-8", b"not found\n")

        def _send(self, code: int, ctype: str, body: bytes) -> None:
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):   # scrapes every few seconds must not fill the journal
            pass

    return Handler


class _Server(ThreadingHTTPServer):
    daemon_threads = True


def serve(address: tuple[str, int], state: AgentState) -> TCPServer:
    """Start serving in a thread; returns the server (server_address holds the bound port)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(AgentCollector(state))
    host, port = address
    server_cls = _Server
    if ":" in host:
        server_cls = type("_Server6", (_Server,), {"address_family": socket.AF_INET6})
    try:
        server = server_cls((host, port), _handler(registry, state))
    except OSError as e:
        raise RmaxError(f"cannot listen on {host}:{port}: {e.strerror}",
                        hint="choose another --listen ADDR:PORT") from None
    threading.Thread(target=server.serve_forever, name="rmax-agent-http", daemon=True).start()
    return server
