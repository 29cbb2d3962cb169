"""A node's rates as the agent publishes them: each rate's recent values, baseline and drift
verdict, in one JSON-able dict. The metrics, `rmax agent status` and `rmax agent fleet` (from a
store or from an agent's /rates.json) all read this same dict."""

from __future__ import annotations

import math
import socket
import time

from rmax.agent.config import AgentConfig
from rmax.agent.drift import judge
from rmax.agent.history import node_series
from rmax.agent.probes import LABEL
from rmax.store import Store

SCHEMA = "rmax.agent.rates/1"


def node_view(store: Store, cfg: AgentConfig, host: str | None = None) -> dict:
    host = host or socket.gethostname()
    rates = []
    for (probe, peer), s in sorted(node_series(store, host, cfg.recent + cfg.history).items()):
        v = judge(s.values, s.higher_is_better, cfg.recent, cfg.history, cfg.min_history, cfg.alpha,
                  cfg.min_shift)
        rates.append({"probe": probe, "peer": peer, "unit": s.unit, "statistic": s.statistic,
                      "higher_is_better": s.higher_is_better, "latest": v.latest, "baseline": _number(v.baseline),
                      "noise": _number(v.noise), "deviation": _number(v.deviation), "p_value": _number(v.p_value),
                      "state": v.state,
                      "drift": v.drift, "n_baseline": v.n_baseline, "recent": s.values[-cfg.recent:],
                      "last_probe_at": s.times[-1], "last_run": s.run_ids[-1]})
    return {"schema": SCHEMA, "host": host, "generated_at": time.time(), "alpha": cfg.alpha,
            "min_change": cfg.min_change, "rates": rates}


def _number(x: float) -> float | None:
    """JSON cannot say NaN: what could not be computed (no verdict while learning) is null."""
    return None if math.isnan(x) else x


def hosts_in(store: Store) -> list[str]:
    """The hosts whose agent stored probe runs in this store."""
    return store.hostnames(LABEL)
