"""matrix: all-pairs latency and bandwidth in N-1 rounds of N/2 concurrent pairs
(native/net/cmd_matrix.c, the mpiGraph / ClusterKit method).

The matrices are the concurrent measurements, every pair under the same load.
A pair is compared with the pairs of its class: within one switch or across
switches when the switch groups are known (cluster.toml, a virtual cluster's
plan, a stored inference), so a trunk slower than the links is the topology,
not an anomaly. A pair whose latency is above 2x its class median, or whose
bandwidth is below 90% of it, is a suspect and is measured alone --retests
times, in turn with a control: the pair of its class nearest the class median
that is no suspect, also alone. It is flagged only when alone it is still
beyond that margin of its control *and* Welch's t-test says its alone values
differ from the control's (on their logarithms: they are rates): both taken
at the same time, so a host that changed speed between the concurrent rounds
and the retests (a virtual machine's CPUs moved, a neighbour's load) slows
both and flags neither. Without a control
(no other pair of its class that is no suspect) the class's concurrent values
stand in. A suspect that recovers alone was slowed by the concurrent load:
reported as contention, not flagged. An alone measurement during which the
pair's two ranks ran on one CPU of one kernel (virtual nodes, containers, two
ranks of a host: the scheduler wakes a partner where its waker runs) measured
that CPU, not the network: it is left out of the test, its control's too, and
a suspect left with fewer than 2 values is reported as "CPU shared"."""

from __future__ import annotations

import dataclasses
import math
import statistics
from dataclasses import dataclass

from rmax.bench.bisect import GROUPS_HELP
from rmax.bench.family import Family, Summary, SurveyPlan, option, register
from rmax.bench.netlaunch import (MESSAGE, cell, check_memory, check_message_sizes, groups_argv, header_summary,
                                  ranks_on_this_host, require_ranks, split_records)
from rmax.bench.runner import Parsed
from rmax.bench.view import Figure, Plot, Table, View, figure
from rmax.native import executable
from rmax.params import TOPOLOGY, Count, Seconds
from rmax.stats import differ_significantly
from rmax.topology.sources import known_groups

SCHEMA = "rmax.matrix/1"
LAT_FACTOR, BW_FRACTION = 2.0, 0.9   # the suspect margins, as in cmd_matrix.c
STATISTIC = ("per pair: median over samples, all pairs of a round at once (concurrent); latency one-way; "
             "suspects also alone, median over retests")


@dataclass
class MatrixOptions:
    lat_size: int = option(8, "Latency message size.", type=MESSAGE)
    bw_size: int = option(1 << 20, "Bandwidth message size.", type=MESSAGE, quick=256 << 10, show="1MiB")
    window: int = option(8, "Messages in flight per pair for the bandwidth.", type=Count(1, 1024))
    budget: float = option(0.01, "Seconds per pair and measurement.", type=Seconds(0.001, 3600, lo_open=False),
                           quick=0.003)
    max_samples: int = option(20, "Most samples per pair.", type=Count(5, 100000), quick=10, cli=False)
    retest: bool = option(True, "Report suspects without measuring them alone.", flag="--no-retest")
    retests: int = option(3, "Alone measurements per suspect (Welch's t-test against its class needs 2 or more).",
                          type=Count(1, 100))
    topology: str | None = option(None, GROUPS_HELP, type=TOPOLOGY)
    # the switch groups found for the run (rmax.topology.sources.known_groups), and where from
    groups: tuple[tuple[str, ...], ...] | None = option(None, "Switch groups of hosts.", cli=False)
    groups_source: str | None = option(None, "Where the switch groups came from.", cli=False)


@dataclass
class Suspect:
    """A pair far from its class under load, and what measuring it alone said."""

    from_rank: int
    to_rank: int
    kind: str                        # latency | bandwidth
    pair_class: str                  # same | across (switches) | all (groups unknown)
    concurrent: float | None         # s or bytes/s, under the round's load
    alone: list[float | None]
    from_host: str | None
    to_host: str | None
    alone_median: float | None
    class_median: float | None
    p: float | None                  # Welch's t-test, alone values against the control's (else the class's pairs)
    flagged: bool
    verdict: str                     # flagged | contention | slow alone, not significant | CPU shared | untested
    control_pair: list[int] | None = None   # [from, to] ranks of the control, measured alone in turn
    control: list[float | None] = ()
    control_median: float | None = None
    alone_cpu_shared: list[bool] = ()       # per alone value: its two ranks ran on one CPU (left out)
    control_cpu_shared: list[bool] = ()


@dataclass
class MatrixSummary(Summary):
    SCHEMA = "rmax.matrix/2"
    hosts: list[str]                 # each rank's host
    labels: list[str]                # each rank by its host; host:rank where a host has several
    latency: list[list[float | None]]      # s, row = from, column = to
    bandwidth: list[list[float | None]]    # bytes/s
    mpi_library: str | None = None
    lat_size: int | None = None
    bw_size: int | None = None
    rounds: int | None = None
    retests: int | None = None
    classes: str = ""
    group_of: list[int] = ()
    suspects: list[Suspect] = ()
    statistic: str = STATISTIC
    cpu_shared: list[list[bool]] = ()      # concurrent rounds: the pair's two ranks ran on one CPU

    @property
    def flagged(self) -> list[Suspect]:
        return [s for s in self.suspects if s.flagged]

    @property
    def contention(self) -> list[Suspect]:
        return [s for s in self.suspects if s.verdict == "contention"]


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
    """Flagged: alone still beyond the margin of the reference, and Welch's t-test over the logarithms
    of (alone values, reference values) significant. The reference is the control measured alone in
    turn with the suspect when there is one (2 values or more), else the class's concurrent values.
    Values taken with the pair's two ranks on one CPU are left out; a suspect left with fewer than 2
    is "CPU shared". Contention: a suspect within the margin alone (the concurrent load slowed it);
    untested: no reference, or a single alone value."""
    def ok(vals, shared=()):
        shared = list(shared or ())
        return [v for k, v in enumerate(vals or []) if v is not None and v > 0      # NaN > 0 is false
                and not (k < len(shared) and shared[k])]

    every = ok(sus.get("alone"))
    alone, control = ok(sus.get("alone"), sus.get("alone_cpu_shared")), \
        ok(sus.get("control"), sus.get("control_cpu_shared"))
    ref_values = control if len(control) >= 2 else class_values
    out = {"alone_median": statistics.median(alone or every) if every else None,
           "class_median": statistics.median(class_values) if class_values else None,
           "control_median": statistics.median(control) if control else None, "p": None}
    if len(alone) < 2 and len(every) > len(alone):
        return {**out, "verdict": "CPU shared", "flagged": False}
    if not alone or not ref_values:
        return {**out, "verdict": "untested", "flagged": False}
    # on the logarithms: bandwidths and latencies are ratios of a rate, and on a linear scale one
    # control spread over 44-81 MB/s hid a pair at 1.2 MB/s (p 0.03-0.06 with 3 values each)
    sig, p = differ_significantly([math.log(v) for v in alone], [math.log(v) for v in ref_values])
    ref = statistics.median(ref_values)
    worse = out["alone_median"] < BW_FRACTION * ref if sus["kind"] == "bandwidth" else \
        out["alone_median"] > LAT_FACTOR * ref
    flagged = bool(sig and worse)
    out["p"] = None if math.isnan(p) else p
    why = ("flagged" if flagged else "untested" if math.isnan(p) else
           "slow alone, not significant" if worse else "contention")
    return {**out, "flagged": flagged, "verdict": why}


def _suspect(sus: dict, m: dict, hosts: list[str], group_of: list[int]) -> Suspect:
    mat = m["latency"] if sus["kind"] == "latency" else m["bandwidth"]
    v = verdict(sus, _class_values(mat, group_of, sus["from"], sus["to"], sus["kind"]))
    pair = [sus["control_from"], sus["control_to"]] if "control_from" in sus else None
    return Suspect(sus["from"], sus["to"], sus["kind"], sus["class"], sus.get("concurrent"), sus.get("alone") or [],
                   hosts[sus["from"]] if hosts else None, hosts[sus["to"]] if hosts else None, v["alone_median"],
                   v["class_median"], v["p"], v["flagged"], v["verdict"], pair, sus.get("control") or [],
                   v["control_median"], [bool(x) for x in sus.get("alone_cpu_shared") or []],
                   [bool(x) for x in sus.get("control_cpu_shared") or []])


@register
class Matrix(Family):
    """All-pairs latency and bandwidth matrices in N-1 rounds of N/2 concurrent pairs;
    a pair far from its class (same switch, across switches) is measured alone, and
    flagged only when alone it still differs significantly."""

    name = "matrix"
    title = "all-pairs latency and bandwidth matrices"
    Options = MatrixOptions
    Summary = MatrixSummary
    scope = "net"
    default_np = None
    survey = SurveyPlan("all-pairs latency and bandwidth", 0.05, 43, ranks="all")
    example = "rmax bench matrix --hostfile hosts"

    def check(self, o, ctx):
        np_ = self.ranks(ctx)
        require_ranks(np_, "the all-pairs matrix", minimum=2)
        check_message_sizes([o.lat_size, o.bw_size])
        check_memory(2 * max(o.lat_size, o.bw_size), ranks_on_this_host(ctx.spec) if ctx.spec else np_,
                     "the send and receive buffers")

    def execute(self, o, ctx):
        found, source = known_groups(o.topology, ctx.launcher)
        groups = tuple(tuple(g) for g in found) if found else None
        return super().execute(dataclasses.replace(o, groups=groups, groups_source=source), ctx)

    def argv(self, o):
        a = [executable("rmax-net"), "matrix", "--json", "-", "--lat-size", str(o.lat_size), "--bw-size",
             str(o.bw_size), "--window", str(o.window), "--budget", str(o.budget), "--max-samples",
             str(o.max_samples), "--retests", str(o.retests), *groups_argv(o.groups)]
        return a + ([] if o.retest else ["--no-retest"])

    def parse(self, records):
        header, _, done = split_records(records, SCHEMA)
        m = next((r for r in records if r.get("schema") == SCHEMA and r.get("record") == "matrix"), None)
        h = header or {}
        hosts = h.get("hosts") or []
        group_of = h.get("group_of") or []
        summary = MatrixSummary(
            **header_summary(header), labels=labels(hosts), latency=m["latency"] if m else [],
            bandwidth=m["bandwidth"] if m else [], lat_size=h.get("lat_size"), bw_size=h.get("bw_size"),
            rounds=h.get("rounds"), retests=h.get("retests"),
            classes="same switch / across switches" if group_of else "all pairs (switch groups unknown)",
            group_of=group_of, suspects=[_suspect(x, m, hosts, group_of) for x in m["suspects"]] if m else [],
            cpu_shared=[[bool(v) for v in row] for row in m.get("cpu_shared", [])] if m else [])
        if m is None:
            return Parsed(summary, {}, "failed", "rmax-net matrix wrote no matrix")
        # raw samples per pair (latency kept in the lower rank's row)
        samples = {"latency": m.get("samples_latency", []), "bandwidth": m.get("samples_bandwidth", [])}
        if not m.get("validated"):
            return Parsed(summary, samples, "invalid", "payload validation failed for some pair")
        if done is None:
            return Parsed(summary, samples, "failed", "rmax-net matrix stopped before the end")
        return Parsed(summary, samples)

    def metrics(self, s: MatrixSummary) -> list[Figure]:
        out = []
        for kind, unit, scale, better in (("latency", "us", 1e6, "lower"), ("bandwidth", "MB/s", 1e-6, "higher")):
            m = getattr(s, kind)
            out += [figure(s, (kind, i, j), f"{kind}.{s.labels[i]}.{s.labels[j]}",
                           f"{kind}, {s.labels[i]} to {s.labels[j]} (concurrent)", unit, STATISTIC, scale=scale,
                           better=better)
                    for i in range(len(m)) for j in range(len(m[i])) if i != j and i < len(s.labels)
                    and j < len(s.labels)]
        return [f for f in out if f]

    def view(self, s: MatrixSummary) -> View:
        names = s.labels or [str(i) for i in range(len(s.hosts))]
        tables = []
        for kind, unit, scale, spec in (("latency", "Latency (us)", 1e6, ".2f"),
                                        ("bandwidth", "Bandwidth (MB/s)", 1e-6, ".0f")):
            rows = [[names[i], *("—" if i == j else cell(v, scale, spec) for j, v in enumerate(row))]
                    for i, row in enumerate(getattr(s, kind))]
            tables.append(Table(["From \\ to", *names], rows,
                                f"{unit}, concurrent: {len(names)} ranks, {s.rounds} rounds, every pair of a round at "
                                f"once; classes: {s.classes}"))
        if s.suspects:
            rows = []
            for x in s.suspects:
                sc, sp = (1e6, ".2f") if x.kind == "latency" else (1e-6, ".0f")
                ctl = (f"{names[x.control_pair[0]]} to {names[x.control_pair[1]]}: {cell(x.control_median, sc, sp)}"
                       if x.control_pair else "none")
                rows.append([names[x.from_rank], names[x.to_rank], x.kind, x.pair_class, cell(x.concurrent, sc, sp),
                             cell(x.alone_median, sc, sp), ctl, cell(x.class_median, sc, sp), cell(x.p, 1, ".3f"),
                             x.verdict.upper() if x.flagged else x.verdict])
            tables.append(Table(["From", "To", "Kind", "Class", "Concurrent", "Alone", "Control alone",
                                 "Class median (concurrent)", "p", "Verdict"],
                                rows, f"suspects measured alone ({s.retests} times each), in turn with a control pair "
                                      "of their class; p: Welch's test against the control (else the class) "
                                      "(latency us, bandwidth MB/s)", left=4))
        notes = [f"{len(s.suspects)} suspects, {len(s.flagged)} flagged, {len(s.contention)} slowed only by the "
                 "concurrent load"]
        pairs = sum(v for i, row in enumerate(s.cpu_shared) for j, v in enumerate(row) if i < j)
        if pairs:
            notes.append(f"{pairs} pairs ran with their two ranks on one CPU in the concurrent rounds: those cells "
                         "measure the CPU as well as the network")
        shared = sum(map(sum, (x.alone_cpu_shared for x in s.suspects))) + \
            sum(map(sum, (x.control_cpu_shared for x in s.suspects)))
        if shared:
            notes.append(f"{shared} alone measurements ran with the pair's two ranks on one CPU: they measured that "
                         "CPU, not the network, and were left out")
        for f in s.flagged:
            sc, unit = (1e6, "us") if f.kind == "latency" else (1e-6, "MB/s")
            notes.append(f"flagged: {f.kind} from {f.from_host or f.from_rank} to {f.to_host or f.to_rank} "
                         f"({f.pair_class} switch class): {cell(f.concurrent, sc, '.3g')} {unit} concurrent, "
                         f"{cell(f.alone_median, sc, '.3g')} alone vs "
                         + (f"{cell(f.control_median, sc, '.3g')} for its control "
                            f"{names[f.control_pair[0]]} to {names[f.control_pair[1]]} alone at the same time"
                            if f.control_pair else f"class median {cell(f.class_median, sc, '.3g')}")
                         + f" (Welch p={cell(f.p, 1, '.3g')})")
        data = [{"from": i, "to": j, "latency_s": v,
                 "bandwidth_Bps": s.bandwidth[i][j] if i < len(s.bandwidth) else None}
                for i, row in enumerate(s.latency) for j, v in enumerate(row)]
        return View(tables, notes, {"pairs": data})

    def plots(self, runs):
        out = []
        for label, s in runs:
            names = s.labels or [str(i) for i in range(len(s.hosts))]
            for kind, scale, what in (("latency", 1e6, "one-way latency (us, median)"),
                                      ("bandwidth", 1e-6, "bandwidth (MB/s, median)")):
                m = [[(v * scale if v is not None else float("nan")) for v in row] for row in getattr(s, kind)]
                if m:
                    out.append(Plot("heatmap", f"{kind.capitalize()}, rank to rank, {label}", ylabel=what,
                                    labels=names, values=m))
        return out
