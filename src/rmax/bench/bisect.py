"""bisect: bisection bandwidth over several random bisections (native/net/cmd_bisect.c).

Half of the ranks stream to the other half at once; the aggregate bandwidth of
one bisection is pairs x window x size over the slowest sender's time. The
headline is the worst bisection (the network's bisection is its weakest cut)
and the median over bisections is kept beside it.

Random halves seldom cut along the switches, so when the switch groups are
known (a cluster.toml, a virtual cluster's plan, or a stored inference) the cut
between the groups is measured first and labelled: that is the worst cut of a
tree or chain of switches, and random cuts alone miss it."""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass

from rmax.bench.netlaunch import (check_memory, check_message_sizes, groups_argv, header_summary, launch,
                                  ranks_on_this_host, require_ranks, split_records, with_program)
from rmax.bench.runner import Parsed
from rmax.launch import LaunchSpec
from rmax.native import executable
from rmax.store import Store
from rmax.store.runs import RunRecord
from rmax.topology.sources import known_groups

SCHEMA = "rmax.bisect/1"


@dataclass
class BisectOptions:
    size: int = 1 << 20
    window: int = 16
    bisections: int = 5
    seed: int = 1
    budget: float = 0.05
    max_samples: int = 50
    topology: str | None = None            # cluster.toml with the switch groups (else found, see groups())

    @classmethod
    def quick(cls) -> "BisectOptions":
        return cls(size=256 << 10, bisections=3, budget=0.01, max_samples=20)


def argv(o: BisectOptions, groups: list[list[str]] | None = None) -> list[str]:
    a = [executable("rmax-net"), "bisect", "--json", "-", "--size", str(o.size), "--window", str(o.window),
         "--bisections", str(o.bisections), "--seed", str(o.seed), "--budget", str(o.budget),
         "--max-samples", str(o.max_samples)]
    a += groups_argv(groups)
    return a


def parse(records: list[dict]) -> Parsed:
    header, points, done = split_records(records, SCHEMA)
    cuts = []
    for r in points:
        med = r["summary"].get("median")
        cuts.append({"bisection": r["bisection"], "cut": r.get("cut", "random"),
                     "pairs": [{"from": p[0], "to": p[1], "bandwidth": p[2] if p[2] and p[2] > 0 else None}
                               for p in r["pairs"]],
                     "bandwidth": r["bytes_per_op"] / med if med else None,
                     "time_per_window": med, "n": r["summary"].get("n"), "validated": r.get("validated")})
    bws = [c["bandwidth"] for c in cuts if c["bandwidth"]]
    worst = min((c for c in cuts if c["bandwidth"]), key=lambda c: c["bandwidth"], default=None)
    between = next((c for c in cuts if c["cut"] == "switch groups"), None)
    random_bws = [c["bandwidth"] for c in cuts if c["bandwidth"] and c["cut"] == "random"]
    summary = {**header_summary(header), "size": header.get("size") if header else None,
               "window": header.get("window") if header else None, "bisections": cuts,
               "bandwidth_min": worst["bandwidth"] if worst else None,
               "worst_cut": worst["cut"] if worst else None,
               "bandwidth_between_groups": between["bandwidth"] if between else None,
               "bandwidth_median": statistics.median(bws) if bws else None,
               "bandwidth_random_median": statistics.median(random_bws) if random_bws else None,
               "statistic": "per bisection: median over samples of the slowest sender's window time; "
                            "headline: the worst bisection",
               "units": {"bandwidth": "bytes/s"}}
    samples = {f"bisection{r['bisection']}": r.get("samples", []) for r in points}
    bad = [str(c["bisection"]) for c in cuts if not c["validated"]]
    if bad:
        return Parsed(summary, samples, "invalid", f"payload validation failed in bisection {', '.join(bad)}")
    if done is None:
        return Parsed(summary, samples, "failed", "rmax-net bisect stopped before its last bisection")
    return Parsed(summary, samples)


def run(spec: LaunchSpec | None = None, *, quick: bool = False, options: BisectOptions | None = None,
        launcher: str | None = None, timeout: float = 600.0, store: Store | None = None,
        parent: str | None = None, on_point=None) -> RunRecord:
    """Bisection bandwidth over the ranks of spec (default: 2 on this host), stored as one run."""
    o = options or (BisectOptions.quick() if quick else BisectOptions())
    np_ = spec.np if spec else 2
    require_ranks(np_, "the bisection test", minimum=2)
    check_message_sizes([o.size])
    check_memory(2 * o.size, ranks_on_this_host(spec) if spec else np_, "the send and receive buffers")
    found, source = known_groups(o.topology, launcher)
    full = with_program(spec, argv(o, found), 2, launcher)
    params = {**asdict(o), "np": full.np, "quick": quick, "launcher": launcher,
              "hosts": [h.name for h in full.hosts] if full.hosts else None,
              "groups": found, "groups_source": source}
    return launch("bisect", full, params, parse, launcher=launcher, timeout=timeout, store=store, parent=parent,
                  on_stdout=on_point)
