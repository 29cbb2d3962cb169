"""A node's own history: the values of each published rate, oldest first, read from the agent's
stored runs on that node (status ok only: an interrupted or failed probe measured nothing)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime

from rmax.agent.probes import LABEL, REGISTRY
from rmax.store import Store

PEERS_LOOKED_AT = 64    # a ping-pong run per peer per set: how many peers' worth of runs to read


@dataclass
class Series:
    probe: str
    peer: str
    unit: str
    statistic: str
    higher_is_better: bool
    kind: str = ""          # the stored runs' kind: which probe measured it
    values: list[float] = field(default_factory=list)
    times: list[float] = field(default_factory=list)      # unix time each probe ended
    run_ids: list[str] = field(default_factory=list)


def _unix(iso: str | None) -> float:
    return datetime.fromisoformat(iso).timestamp() if iso else 0.0


def node_series(store: Store, host: str, keep: int) -> dict[tuple[str, str], Series]:
    """(probe, peer) -> the latest `keep` values of that rate measured by the agent on `host`."""
    out: dict[tuple[str, str], Series] = {}
    for probe in REGISTRY.values():
        limit = keep * (PEERS_LOOKED_AT if probe.per_peer else 1)
        for rec in reversed(store.list(kind=probe.kind, status="ok", label=LABEL, hostname=host, limit=limit)):
            for r in probe.rates(rec):
                if not math.isfinite(r.value) or r.value <= 0:   # not a rate: nothing was measured
                    continue
                s = out.setdefault((r.probe, r.peer), Series(r.probe, r.peer, r.unit, r.statistic,
                                                            r.higher_is_better, probe.kind))
                s.values.append(r.value)
                s.times.append(_unix(rec.ended_at or rec.started_at))
                s.run_ids.append(rec.id)
    for s in out.values():
        del s.values[:-keep], s.times[:-keep], s.run_ids[:-keep]
    return out
