"""The agent's metrics: text-format Prometheus metrics from a registry of its own (never the
global default) and the same view as JSON for `rmax agent fleet`, rendered whenever the state
changes, so that a scrape only copies bytes (the endpoint itself: rmax.agent.endpoint).

Routes: /metrics (Prometheus text format), /rates.json (the node view), / (a short index)."""

from __future__ import annotations

import json
import math
import threading

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from rmax import __version__
from rmax.agent.endpoint import Endpoint, Pages
from rmax.errors import RmaxError


class AgentState:
    """What the metrics show: the node view (replaced whole after every probe, so a scrape never
    sees half an update) and the agent's own live state. Every change goes through update() or
    count(), which render the pages again."""

    LIVE = ("view", "idle", "load", "busy_reason", "probing", "sets")

    def __init__(self, host: str):
        self.host = host
        self.view: dict = {"host": host, "rates": []}
        self.idle: bool | None = None
        self.load: float | None = None
        self.busy_reason: str | None = None
        self.probing: str | None = None
        self.sets = 0
        self.probes: dict[tuple[str, str], int] = {}    # (probe, status) -> count since start
        self._lock = threading.RLock()
        self._registry = CollectorRegistry(auto_describe=False)
        self._registry.register(AgentCollector(self))
        self.pages: Pages = {}
        self._render()

    def update(self, **changes) -> None:
        with self._lock:
            for key, value in changes.items():
                if key not in self.LIVE:
                    raise AttributeError(key)
                setattr(self, key, value)
            self._render()

    def count(self, probe: str, status: str) -> None:
        with self._lock:
            self.probes[(probe, status)] = self.probes.get((probe, status), 0) + 1
            self._render()

    def live(self) -> dict:
        with self._lock:
            probes = dict(self.probes)
        return {"idle": self.idle, "load": self.load, "busy_reason": self.busy_reason, "probing": self.probing,
                "sets": self.sets, "probes": [{"probe": p, "status": s, "count": n} for (p, s), n in probes.items()]}

    def _render(self) -> None:
        rates = json.dumps({**self.view, "agent": self.live()}, allow_nan=False, default=str)
        # One assignment: the endpoint's thread sees the old pages or the new ones, never a mix.
        self.pages = {"/metrics": (CONTENT_TYPE_LATEST, generate_latest(self._registry)),
                      "/rates.json": ("application/json", rates.encode()),
                      "/": ("text/plain; charset=utf-8",
                            f"rmax agent on {self.host}: /metrics (Prometheus), /rates.json\n".encode())}


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


def serve(address: tuple[str, int], state: AgentState) -> Endpoint:
    """Start serving in a thread; returns the endpoint (server_address holds the bound port)."""
    try:
        return Endpoint(address, lambda: state.pages)
    except OSError as e:
        raise RmaxError(f"cannot listen on {address[0]}:{address[1]}: {e.strerror}",
                        hint="choose another --listen ADDR:PORT") from None
