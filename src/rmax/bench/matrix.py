"""matrix: all-pairs latency and bandwidth in N-1 rounds of N/2 concurrent pairs
(native/net/cmd_matrix.c, the mpiGraph / ClusterKit method).

The matrices are the concurrent measurements, every pair under the same load.
A pair is compared with the pairs of its class: within one switch or across
switches when the switch groups are known (cluster.toml, a virtual cluster's
plan, a stored inference), so a trunk slower than the links is the topology,
not an anomaly. A pair whose latency is above 2x its class median, or whose
bandwidth is below 90% of it, is a suspect and is measured alone --retests
times; it is flagged only when alone it is still beyond that margin *and*
Welch's t-test says its alone values differ from its class's pairs (each pair
one independent measurement). A suspect that recovers alone was slowed by the
concurrent load: reported as contention, not flagged."""

from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass

from rmax.bench.netlaunch import (check_memory, check_message_sizes, groups_argv, header_summary, launch,
                                  ranks_on_this_host, require_ranks, split_records, with_program)
from rmax.bench.runner import Parsed
from rmax.launch import LaunchSpec
from rmax.native import executable
from rmax.stats import differ_significantly
from rmax.store import Store
from rmax.store.runs import RunRecord
from rmax.topology.sources import known_groups

SCHEMA = "rmax.matrix/1"
LAT_FACTOR, BW_FRACTION = 2.0, 0.9   # the suspect margins, as in cmd_matrix.c


@dataclass
class MatrixOptions:
    lat_size: int = 8
    bw_size: int = 1 << 20
    window: int = 8
    budget: float = 0.01
    max_samples: int = 20
    retest: bool = True
    retests: int = 3                  # alone measurements per suspect: a t-test needs two or more
    topology: str | None = None       # cluster.toml with the switch groups (else sources.known_groups)

    @classmethod
    def quick(cls) -> "MatrixOptions":
        return cls(bw_size=256 << 10, budget=0.003, max_samples=10)


def argv(o: MatrixOptions, groups: list[list[str]] | None = None) -> list[str]:
    a = [executable("rmax-net"), "matrix", "--json", "-", "--lat-size", str(o.lat_size), "--bw-size", str(o.bw_size),
         "--window", str(o.window), "--budget", str(o.budget), "--max-samples", str(o.max_samples),
         "--retests", str(o.retests)]
    a += groups_argv(groups)
    return a + ([] if o.retest else ["--no-retest"])


def labels(hosts: list[str]) -> list[str]:
    """Each rank by its host; host:rank where a host has several ranks."""
    many = {h for h in hosts if hosts.count(h) > 1}
    return [f"{h}:{r}" if h in many else h for r, h in enumerate(hosts)]


def _class_values(m: list, group_of: list[int], i: int, j: int, kind: str) -> list[float]:
    """The concurrent values of the other pairs of (i, j)'s class (latency: each unordered pair once)."""
    def cls(a, b):
        return bool(group_of) and group_of[a] != group_of[b]
    n = len(m)
    return [m[a][b] for a in range(n) for b in range(n)
            if a != b and (kind == "bandwidth" or a < b) and {a, b} != {i, j} and cls(a, b) == cls(i, j)
            and m[a][b] is not None]


def verdict(sus: dict, class_values: list[float]) -> dict:
    """Flagged: alone still beyond the margin and Welch's t-test over (alone values, class values)
    significant; contention: a suspect that is within the margin alone (the concurrent load slowed it);
    untested: no other pair of its class, or a single alone value."""
    alone = [v for v in sus.get("alone") or [] if v is not None and v > 0]
    out = {"alone_median": statistics.median(alone) if alone else None,
           "class_median": statistics.median(class_values) if class_values else None, "p": None}
    if not alone or not class_values:
        return {**out, "verdict": "untested", "flagged": False}
    sig, p = differ_significantly(alone, class_values)
    ref = out["class_median"]
    worse = out["alone_median"] < BW_FRACTION * ref if sus["kind"] == "bandwidth" else \
        out["alone_median"] > LAT_FACTOR * ref
    flagged = bool(sig and worse)
    out["p"] = None if math.isnan(p) else p
    why = ("flagged" if flagged else "untested" if math.isnan(p) else
           "slow alone, not significant" if worse else "contention")
    return {**out, "flagged": flagged, "verdict": why}


def parse(records: list[dict]) -> Parsed:
    header, _, done = split_records(records, SCHEMA)
    m = next((r for r in records if r.get("schema") == SCHEMA and r.get("record") == "matrix"), None)
    summary = {**header_summary(header), "lat_size": header.get("lat_size") if header else None,
               "bw_size": header.get("bw_size") if header else None,
               "rounds": header.get("rounds") if header else None,
               "retests": header.get("retests") if header else None,
               "statistic": "per pair: median over samples, all pairs of a round at once (concurrent); "
                            "latency one-way; suspects also alone, median over retests",
               "units": {"latency": "s", "bandwidth": "bytes/s"}}
    if m is None:
        return Parsed(summary, {}, "failed", "rmax-net matrix wrote no matrix")
    hosts = summary.get("hosts") or []
    group_of = (header or {}).get("group_of") or []
    suspects = []
    for sus in m["suspects"]:
        mat = m["latency"] if sus["kind"] == "latency" else m["bandwidth"]
        s = {**sus, "from_host": hosts[sus["from"]] if hosts else None,
             "to_host": hosts[sus["to"]] if hosts else None}
        suspects.append({**s, **verdict(s, _class_values(mat, group_of, sus["from"], sus["to"], sus["kind"]))})
    summary.update(latency=m["latency"], bandwidth=m["bandwidth"], labels=labels(hosts),
                   classes="same switch / across switches" if group_of else "all pairs (switch groups unknown)",
                   group_of=group_of, suspects=suspects, flagged=[s for s in suspects if s["flagged"]],
                   contention=[s for s in suspects if s["verdict"] == "contention"])
    # raw samples per pair (latency kept in the lower rank's row)
    samples = {"latency": m.get("samples_latency", []), "bandwidth": m.get("samples_bandwidth", [])}
    if not m.get("validated"):
        return Parsed(summary, samples, "invalid", "payload validation failed for some pair")
    if done is None:
        return Parsed(summary, samples, "failed", "rmax-net matrix stopped before the end")
    return Parsed(summary, samples)


def run(spec: LaunchSpec | None = None, *, quick: bool = False, options: MatrixOptions | None = None,
        launcher: str | None = None, timeout: float = 600.0, store: Store | None = None,
        parent: str | None = None, on_point=None) -> RunRecord:
    """All-pairs matrices over the ranks of spec (default: 2 on this host), stored as one run."""
    o = options or (MatrixOptions.quick() if quick else MatrixOptions())
    np_ = spec.np if spec else 2
    require_ranks(np_, "the all-pairs matrix", minimum=2)
    check_message_sizes([o.lat_size, o.bw_size])
    check_memory(2 * max(o.lat_size, o.bw_size), ranks_on_this_host(spec) if spec else np_,
                 "the send and receive buffers")
    found, source = known_groups(o.topology, launcher)
    full = with_program(spec, argv(o, found), 2, launcher)
    params = {**asdict(o), "np": full.np, "quick": quick, "launcher": launcher,
              "hosts": [h.name for h in full.hosts] if full.hosts else None,
              "groups": found, "groups_source": source}
    return launch("matrix", full, params, parse, launcher=launcher, timeout=timeout, store=store, parent=parent,
                  on_stdout=on_point)
