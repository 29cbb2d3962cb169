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

import dataclasses
import functools
import statistics
from dataclasses import dataclass

from rmax.bench.family import Family, Summary, option, register
from rmax.bench.netlaunch import (MAX_MESSAGE, cell, check_memory, check_message_sizes, groups_argv, header_summary,
                                  require_ranks, split_records)
from rmax.bench.runner import Parsed
from rmax.bench.view import Figure, Table, View, figure
from rmax.native import executable
from rmax.params import TOPOLOGY, Count, Seconds, Size
from rmax.topology.sources import known_groups

STATISTIC = "per bisection: median over samples of the slowest sender's window time"
GROUPS_HELP = "cluster.toml with the switch groups [default: a virtual cluster's, else the latest inference]."


@dataclass
class BisectOptions:
    size: int = option(1 << 20, "Message size.", type=Size(1, MAX_MESSAGE), quick=256 << 10, show="1MiB")
    window: int = option(16, "Messages in flight per pair.", type=Count(1, 1024))
    bisections: int = option(5, "Random bisections.", type=Count(1, 10000), quick=3)
    seed: int = option(1, "Seed of the random bisections.", type=Count(1, 10**18))
    budget: float = option(0.05, "Seconds per bisection.", type=Seconds(0.001, 3600, lo_open=False), quick=0.01)
    max_samples: int = option(50, "Most samples per bisection.", type=Count(5, 100000), quick=20, cli=False)
    topology: str | None = option(None, GROUPS_HELP, type=TOPOLOGY)
    # the switch groups found for the run (rmax.topology.sources.known_groups), and where from
    groups: tuple[tuple[str, ...], ...] | None = option(None, "Switch groups of hosts.", cli=False)
    groups_source: str | None = option(None, "Where the switch groups came from.", cli=False)


@dataclass
class Pair:
    from_rank: int
    to_rank: int
    bandwidth: float | None          # bytes/s of this pair in the bisection


@dataclass
class Cut:
    bisection: int
    cut: str                         # "switch groups" | "random"
    pairs: list[Pair]
    bandwidth: float | None          # bytes/s, aggregate: pairs x window x size / the slowest sender's time
    time_per_window: float | None
    n: int | None
    validated: bool | None

    @property
    def slowest(self) -> float | None:
        return min((p.bandwidth for p in self.pairs if p.bandwidth), default=None)


@dataclass
class BisectSummary(Summary):
    SCHEMA = "rmax.bisect/2"
    hosts: list[str]
    bisections: list[Cut]
    mpi_library: str | None = None
    size: int | None = None
    window: int | None = None
    groups: list[list[str]] | None = None
    groups_source: str | None = None
    bandwidth_min: float | None = None               # the worst bisection
    worst_cut: str | None = None
    bandwidth_between_groups: float | None = None
    bandwidth_median: float | None = None
    bandwidth_random_median: float | None = None
    statistic: str = STATISTIC + "; the network's: the worst bisection"


def _cut(r: dict) -> Cut:
    med = r["summary"].get("median")
    return Cut(r["bisection"], r.get("cut", "random"),
               [Pair(p[0], p[1], p[2] if p[2] and p[2] > 0 else None) for p in r["pairs"]],
               r["bytes_per_op"] / med if med else None, med, r["summary"].get("n"), r.get("validated"))


@register
class Bisect(Family):
    """Bisection bandwidth: half the ranks stream to the other half, across the cut between the
    switch groups when they are known, and over random bisections."""

    name = "bisect"
    native = ("rmax-net", "bisect")
    title = "bisection bandwidth over random bisections"
    Options = BisectOptions
    Summary = BisectSummary
    scope = "net"
    default_np = None
    order = 44      # not a survey step; in the report after the network steps
    example = "rmax bench bisect --hostfile hosts"

    def check(self, o, ctx):
        np_ = self.ranks(ctx)
        require_ranks(np_, "the bisection test", minimum=2)
        check_message_sizes([o.size])
        check_memory(2 * o.size, ctx.spec.ranks_on_this_host() if ctx.spec else np_, "the send and receive buffers")

    def execute(self, o, ctx):
        found, source = known_groups(o.topology, ctx.launcher)
        groups = tuple(tuple(g) for g in found) if found else None
        return super().execute(dataclasses.replace(o, groups=groups, groups_source=source), ctx)

    def argv(self, o):
        return [executable("rmax-net"), "bisect", "--json", "-", "--size", str(o.size), "--window", str(o.window),
                "--bisections", str(o.bisections), "--seed", str(o.seed), "--budget", str(o.budget),
                "--max-samples", str(o.max_samples), *groups_argv(o.groups)]

    def parser(self, o, ctx):
        return functools.partial(self.parse, groups=o.groups, groups_source=o.groups_source)

    def parse(self, records, groups=None, groups_source=None):
        header, points, done = split_records(records, "rmax.bisect/1")
        cuts = [_cut(r) for r in points]
        measured = [c for c in cuts if c.bandwidth]
        worst = min(measured, key=lambda c: c.bandwidth, default=None)
        between = next((c for c in cuts if c.cut == "switch groups"), None)
        random_bws = [c.bandwidth for c in measured if c.cut == "random"]
        h = header or {}
        summary = BisectSummary(
            **header_summary(header), bisections=cuts, size=h.get("size"), window=h.get("window"),
            groups=[list(g) for g in groups] if groups else None, groups_source=groups_source,
            bandwidth_min=worst.bandwidth if worst else None, worst_cut=worst.cut if worst else None,
            bandwidth_between_groups=between.bandwidth if between else None,
            bandwidth_median=statistics.median([c.bandwidth for c in measured]) if measured else None,
            bandwidth_random_median=statistics.median(random_bws) if random_bws else None)
        samples = {f"bisection{r['bisection']}": r.get("samples", []) for r in points}
        bad = [str(c.bisection) for c in cuts if not c.validated]
        if bad:
            return Parsed(summary, samples, "invalid", f"payload validation failed in bisection {', '.join(bad)}")
        if done is None:
            return Parsed(summary, samples, "failed", "rmax-net bisect stopped before its last bisection")
        return Parsed(summary, samples)

    def metrics(self, s: BisectSummary) -> list[Figure]:
        out = [figure(s, ("bandwidth_min",), "worst", f"bisection bandwidth, worst cut ({s.worst_cut})", "MB/s",
                      STATISTIC + "; the worst bisection", scale=1e-6),
               figure(s, ("bandwidth_random_median",), "random_median", "bisection bandwidth, random cuts", "MB/s",
                      STATISTIC + "; median over random bisections", scale=1e-6),
               figure(s, ("bandwidth_between_groups",), "between_groups", "bisection bandwidth between switch groups",
                      "MB/s", STATISTIC, scale=1e-6)]
        return [f for f in out if f]

    def view(self, s: BisectSummary) -> View:
        between = next((c for c in s.bisections if c.cut == "switch groups"), None)
        rows = [[str(c.bisection), c.cut, str(len(c.pairs)), cell(c.bandwidth, 1e-6, ".0f"),
                 cell(c.slowest, 1e-6, ".0f"), "" if c.validated else "INVALID"] for c in s.bisections]
        cuts = Table(["Bisection", "Cut", "Pairs", "Bandwidth (MB/s)", "Slowest pair (MB/s)", "Note"], rows,
                     f"{len(s.hosts)} ranks, {s.size} B messages, window {s.window}; {STATISTIC}", left=2)
        total = Table(["Ranks", "Worst (MB/s)", "Worst cut", "Median of random cuts (MB/s)", "Bisections"],
                      [[str(len(s.hosts)), cell(s.bandwidth_min, 1e-6, ".0f"), s.worst_cut or "—",
                        cell(s.bandwidth_random_median, 1e-6, ".0f"), str(len(s.bisections))]],
                      "half the ranks stream to the other half: across the cut between the switch groups when they "
                      "are known, and over random bisections; worst = the weakest cut")
        notes = ["switch groups: " + (f"{len(s.groups)} from {s.groups_source}" if s.groups
                                      else f"none known ({s.groups_source}): random cuts only")
                 + ("" if between or not s.groups else
                    "; the ranks' hosts are not all in them, or all in one: random cuts only")]
        if between and s.hosts:
            notes.append("pairs across the switch groups: "
                         + ", ".join(f"{s.hosts[p.from_rank]}->{s.hosts[p.to_rank]}" for p in between.pairs))
        data = [{"bisection": c.bisection, "cut": c.cut, "pairs": len(c.pairs), "bandwidth_Bps": c.bandwidth,
                 "slowest_pair_Bps": c.slowest, "time_per_window_s": c.time_per_window, "n": c.n,
                 "validated": c.validated} for c in s.bisections]
        return View([cuts, total], notes, {"bisections": data})
