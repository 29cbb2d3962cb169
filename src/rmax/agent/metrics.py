"""The agent's metrics: text-format Prometheus metrics from a registry of its own (never the
global default) and the same view as JSON for `rmax agent fleet`, rendered whenever the state
changes, so that a scrape only copies bytes (the endpoint itself: rmax.agent.endpoint).

Named by Prometheus's conventions (docs/AGENT.md lists them): one metric per quantity with its
unit in the name (flop/s, bytes/s and seconds never share one, so sum and avg over a metric mean
something), the probe and its statistic in labels, and the agent's own state as enum-style gauges
(one series per possible value, 1 for the current one), so that a node whose idle gate never
opens shows why.

Routes: /metrics (Prometheus text format), /rates.json (the node view), / (a short index)."""

from __future__ import annotations

import json
import math
import threading
from typing import Callable

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from rmax import __version__
from rmax.agent.config import AgentConfig
from rmax.agent.endpoint import Endpoint, Pages
from rmax.agent.idle import Reading
from rmax.errors import RmaxError


class AgentState:
    """What the metrics show: the node view (replaced whole after every probe, so a scrape never
    sees half an update) and the agent's own live state. Every change goes through update(),
    look() or count(), which render the pages again (and hand the metrics to `on_render`: the
    textfile mode, rmax.agent.promfile)."""

    LIVE = ("view", "probing", "sets")

    def __init__(self, host: str, cfg: AgentConfig | None = None, on_render: Callable[[bytes], None] | None = None):
        self.host = host
        self.cfg = cfg or AgentConfig()
        self.view: dict = {"host": host, "rates": []}
        self.idle: bool | None = None
        self.load: float | None = None
        self.busy_reason: str | None = None
        self.busy_cause: str | None = None
        self.probing: str | None = None
        self.sets = 0
        self.probes: dict[tuple[str, str], int] = {}    # (probe, status) -> count since start
        self.busy_looks = dict.fromkeys(BUSY_CAUSES, 0)
        self._on_render = on_render
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

    def look(self, reading: Reading, due: bool = True) -> None:
        """A look at the load; `due`: a probe set was due, and a busy node puts it off."""
        with self._lock:
            self.idle, self.load, self.busy_reason, self.busy_cause = (reading.idle, reading.load,
                                                                       reading.busy_reason, reading.cause)
            if due and reading.cause:
                self.busy_looks[reading.cause] += 1
            self._render()

    def count(self, probe: str, status: str) -> None:
        with self._lock:
            self.probes[(probe, status)] = self.probes.get((probe, status), 0) + 1
            self._render()

    @property
    def activity(self) -> str:
        """One of STATES: probing, busy (the last look found work), idle, or starting (no look yet)."""
        if self.probing is not None:
            return "probing"
        return "starting" if self.idle is None else "idle" if self.idle else "busy"

    def live(self) -> dict:
        with self._lock:
            return {"state": self.activity, "idle": self.idle, "load": self.load, "max_load": self.cfg.max_load,
                    "busy_reason": self.busy_reason, "busy_cause": self.busy_cause, "probing": self.probing,
                    "sets": self.sets, "busy_looks": dict(self.busy_looks),
                    "probes": [{"probe": p, "status": s, "count": n} for (p, s), n in self.probes.items()]}

    def _render(self) -> None:
        rates = json.dumps({**self.view, "agent": self.live()}, allow_nan=False, default=str)
        metrics = generate_latest(self._registry)
        # One assignment: the endpoint's thread sees the old pages or the new ones, never a mix.
        self.pages = {"/metrics": (CONTENT_TYPE_LATEST, metrics),
                      "/rates.json": ("application/json", rates.encode()),
                      "/": ("text/plain; charset=utf-8",
                            f"rmax agent on {self.host}: /metrics (Prometheus), /rates.json\n".encode())}
        if self._on_render:
            self._on_render(metrics)


def _num(x) -> float:
    return math.nan if x is None else float(x)


STATES = ("starting", "idle", "probing", "busy")
BUSY_CAUSES = ("load", "slurm_job", "slurm_unanswered")     # rmax.agent.idle.Reading.cause

# The rates' quantities, by the unit a probe gives its rate (rmax.agent.probes.Rate.unit): the
# metric's name after rmax_probe_ / rmax_probe_baseline_ / rmax_probe_noise_, and what was measured.
QUANTITIES = {
    "flops_per_second": ("flops_per_second", "Floating-point operations per second: peakflops_fp64 the FMA peak "
                         "(fp64, widest ISA, every allowed core), dgemm DGEMM of order 1024 on every allowed core"),
    "bytes_per_second": ("bytes_per_second", "Bytes per second: stream_triad STREAM Triad on every core, "
                         "pingpong_bandwidth MPI ping-pong of 1 MiB messages to the peer"),
    "seconds": ("latency_seconds", "Latency in seconds: memory_latency one load of a random pointer chase over 4x "
                "the largest cache, pingpong_latency one-way MPI latency of 1 B messages to the peer"),
}


class AgentCollector(Collector):
    def __init__(self, state: AgentState):
        self.state = state

    def collect(self):
        view, live = self.state.view, self.state.live()
        keys = ["probe", "peer"]
        measured = {}
        for unit, (stem, what) in QUANTITIES.items():
            measured[unit] = [
                GaugeMetricFamily(f"rmax_probe_{stem}", f"{what}. The latest value of the agent's probe; `statistic`: "
                                  "over the probe's timed repetitions", labels=[*keys, "statistic"]),
                GaugeMetricFamily(f"rmax_probe_baseline_{stem}", f"Median of the node's own earlier values of the rate "
                                  f"(NaN before there are any). {what}", labels=[*keys, "statistic"]),
                GaugeMetricFamily(f"rmax_probe_noise_{stem}", f"Robust spread (1.4826 x MAD) of the baseline values. "
                                  f"{what}", labels=[*keys, "statistic"])]
        per_rate = {
            "deviation": GaugeMetricFamily("rmax_probe_deviation_ratio", "Latest value / baseline - 1 (NaN before "
                                           "there is a baseline)", labels=keys),
            "p_value": GaugeMetricFamily("rmax_probe_drift_p_value", "p-value of the drift test, one-sided "
                                         "Mann-Whitney U of the recent values against the baseline (NaN while "
                                         "learning)", labels=keys),
            "n_baseline": GaugeMetricFamily("rmax_probe_baseline_samples", "Number of values in the baseline",
                                            labels=keys),
            "last_probe_at": GaugeMetricFamily("rmax_probe_last_success_timestamp_seconds",
                                               "Unix time the latest value was measured (end of the last probe run "
                                               "that succeeded)", labels=keys),
        }
        verdict = GaugeMetricFamily("rmax_probe_state", "1 for the rate's drift verdict: learning (fewer baseline "
                                    "values than a verdict needs), steady, or drift (recent values significantly "
                                    "worse than the node's own baseline, by min_change percent or more)",
                                    labels=[*keys, "state"])
        for r in view["rates"]:
            k = [r["probe"], r["peer"]]
            for fam, field in zip(measured[r["unit"]], ("latest", "baseline", "noise")):
                fam.add_metric([*k, r["statistic"]], _num(r[field]))
            for field, fam in per_rate.items():
                fam.add_metric(k, _num(r[field]))
            for s in ("learning", "steady", "drift"):
                verdict.add_metric([*k, s], float(r["state"] == s))
        for fams in measured.values():
            yield from fams
        yield from per_rate.values()
        yield verdict
        yield from self._agent(live)

    def _agent(self, live: dict):
        info = GaugeMetricFamily("rmax_agent_info", "The agent and the node it measures", labels=["host", "version"])
        info.add_metric([self.state.host, __version__], 1.0)
        yield info
        state = GaugeMetricFamily("rmax_agent_state", "1 for what the agent does now: starting (no look at the load "
                                  "yet), idle (the last look found the node idle), probing, or busy (the last look "
                                  "found work, and the probes wait: see rmax_agent_busy_reason)", labels=["state"])
        for s in STATES:
            state.add_metric([s], float(live["state"] == s))
        yield state
        why = GaugeMetricFamily("rmax_agent_busy_reason", "1 for why the last look found the node busy: load (other "
                                "processes' runnable tasks reached rmax_agent_max_load), slurm_job (a Slurm job on "
                                "the node), slurm_unanswered (squeue failed; slurm = on)", labels=["reason"])
        for c in BUSY_CAUSES:
            why.add_metric([c], float(live["busy_cause"] == c))
        yield why
        yield GaugeMetricFamily("rmax_agent_load", "Runnable and uninterruptible tasks of other processes, averaged "
                                "over the window, at the last look (NaN before it)", value=_num(live["load"]))
        yield GaugeMetricFamily("rmax_agent_max_load", "The idle gate: a probe set starts only while "
                                "rmax_agent_load is below this", value=self.state.cfg.max_load)
        yield GaugeMetricFamily("rmax_agent_interval_seconds", "Seconds from one probe set's start to the next, when "
                                "the node is idle", value=self.state.cfg.interval)
        looks = CounterMetricFamily("rmax_agent_busy_looks", "Looks at the node when a probe set was due that found "
                                    "it busy (the set then waits retry seconds), by reason", labels=["reason"])
        for c, n in live["busy_looks"].items():
            looks.add_metric([c], n)
        yield looks
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
