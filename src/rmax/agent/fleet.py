"""`rmax agent fleet`: several nodes' views side by side, ranked by each rate, with the outliers
named. I-Cluster's lesson: a cluster runs at the speed of its slowest node.

A node is an outlier for a rate when its recent values are significantly worse than the pooled
recent values of all the other nodes (one-sided Mann-Whitney U test, rmax.stats.shifted): a
statement about today's measurements and their spread, not a fixed percentage. Nodes of
different hardware differ for good reasons; the test only says they differ."""

from __future__ import annotations

import json
import statistics
import time
import urllib.error
import urllib.request
from pathlib import Path

from rmax.agent.config import AgentConfig
from rmax.agent.drift import worse_by
from rmax.agent.view import SCHEMA, hosts_in, node_view
from rmax.errors import MissingData, RmaxError
from rmax.stats import shifted


MAX_ANSWER = 16 << 20   # bytes: an agent's rates are a few KiB


def _read(url: str, timeout: float) -> bytes:
    """The answer's body within `timeout` seconds in all: the socket's timeout bounds each read, so a
    server that sends a byte now and then would otherwise hold the command for ever."""
    deadline = time.monotonic() + timeout
    body = bytearray()
    with urllib.request.urlopen(url, timeout=timeout) as r:
        while chunk := r.read1(65536):
            body += chunk
            if len(body) > MAX_ANSWER:
                raise RmaxError(f"{url} answered more than {MAX_ANSWER >> 20} MiB: not an rmax agent's rates")
            if time.monotonic() > deadline:
                raise RmaxError(f"{url} did not finish its answer within {timeout:g} s")
    return bytes(body)


def _fetch(url: str, timeout: float) -> dict:
    if not url.rstrip("/").endswith(".json"):
        url = url.rstrip("/").removesuffix("/metrics") + "/rates.json"
    try:
        data = json.loads(_read(url, timeout))
    except urllib.error.HTTPError as e:
        raise RmaxError(f"{url} answered HTTP {e.code}", hint="give an agent's address, e.g. http://node:9477") from None
    except (urllib.error.URLError, OSError) as e:
        reason = getattr(e, "reason", e)
        raise RmaxError(f"cannot read {url}: {getattr(reason, 'strerror', None) or reason}",
                        hint="is the agent running there, and listening beyond 127.0.0.1 (--listen)?") from None
    except ValueError:
        raise RmaxError(f"{url} did not answer JSON", hint="give an rmax agent's address") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise RmaxError(f"{url} is not an rmax agent's rates ({SCHEMA})", hint="give an rmax agent's address")
    return data


def load(sources: list[str], cfg: AgentConfig, timeout: float = 10.0) -> list[dict]:
    """The node views of every source: an agent's URL (one node), or a store (every node in it)."""
    from rmax.store import open_store

    views: list[dict] = []
    for src in sources:
        if src.startswith(("http://", "https://")):
            views.append(_fetch(src, timeout))
            continue
        path = Path(src)
        if not path.is_file():
            raise RmaxError(f"{src} is neither a results store nor an http:// address of an agent")
        with open_store(path) as store:
            hosts = hosts_in(store)
            if not hosts:
                raise MissingData(f"store {src} holds no agent probes", hint="run `rmax agent run` on the node first")
            views += [node_view(store, cfg, h) for h in hosts]
    seen: set[str] = set()
    for v in views:
        if v["host"] in seen:
            raise RmaxError(f"node {v['host']} appears in two sources", hint="give each node once")
        seen.add(v["host"])
    return views


def rank(views: list[dict], alpha: float, min_change: float) -> list[dict]:
    """Per rate: the nodes best first by the median of their recent values, and which are outliers:
    significantly worse than the other nodes' pooled values, and by at least `min_change` (a fraction)
    of their median (drift.judge's rule). A ping-pong rate pools a node's values to all its peers."""
    by_probe: dict[str, dict] = {}
    for v in views:
        for r in v["rates"]:
            p = by_probe.setdefault(r["probe"], {"probe": r["probe"], "unit": r["unit"], "statistic": r["statistic"],
                                                 "higher_is_better": r["higher_is_better"], "values": {}})
            p["values"].setdefault(v["host"], []).extend(r["recent"])
    out = []
    for name in sorted(by_probe):
        p = by_probe.pop(name)
        values = p.pop("values")
        rows = []
        for host, vals in values.items():
            others = [x for h, xs in values.items() if h != host for x in xs]
            flagged, pv = shifted(vals, others, "lower" if p["higher_is_better"] else "higher", alpha)
            median = statistics.median(vals)
            flagged = flagged and worse_by(median, statistics.median(others), p["higher_is_better"]) >= min_change
            rows.append({"host": host, "median": median, "n": len(vals),
                         "p_value": None if pv != pv else pv, "outlier": flagged})
        rows.sort(key=lambda r: r["median"], reverse=p["higher_is_better"])
        out.append({**p, "nodes": rows, "outliers": [r["host"] for r in rows if r["outlier"]]})
    return out
