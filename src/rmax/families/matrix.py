"""matrix: all-pairs latency and bandwidth in rounds of concurrent disjoint pairs
(native/net/cmd_matrix.c, the mpiGraph / ClusterKit method).

The matrices are the concurrent measurements, every pair under the same load.
Up to SAMPLE_ABOVE ranks (QUICK_SAMPLE_ABOVE with --quick) every pair is
measured (N-1 rounds of N/2 pairs); above, a sample (`--design sampled`):
every pair inside a switch when the switches are known, plus the pairs
(p, p+k) of O(log N) shifts k over the ranks ordered by switch, so N=1024
takes ~45 rounds instead of 1023; the pairs not measured are None in the
matrices.

A pair is compared with the pairs of its class: within one switch or across
switches when the switch groups are known (cluster.toml, a virtual cluster's
plan, a stored inference), so a trunk slower than the links is the topology,
not an anomaly. A pair whose latency is above 2x its class median, or whose
bandwidth is below 90% of it, is a suspect; the most severe (4 per rank) are
measured again --retests times in rounds of disjoint pairs (while
--retest-budget lasts; the others are listed as not retested), each in turn
with a control: the pair of its class nearest the class median that is no
suspect, measured the same way. It is flagged only when on retest it is still
beyond that margin of its control *and* Welch's t-test says its values differ
from the control's (on their logarithms: they are rates): both taken at the
same time, so a host that changed speed between the concurrent rounds and the
retests (a virtual machine's CPUs moved, a neighbour's load) slows both and
flags neither. Without a control (no other pair of its class that is no
suspect) the class's concurrent values stand in. A suspect that recovers on
retest was slowed by the concurrent load: reported as contention, not flagged.
A retest during which the pair's two ranks ran on one CPU of one kernel
(virtual nodes, containers, two ranks of a host: the scheduler wakes a partner
where its waker runs) measured that CPU, not the network: it is left out of
the test, its control's too, and a suspect left with fewer than 2 values is
reported as "CPU shared".

The kernel writes each concurrent round's pairs as a record when the round ends,
the matrices before any retest, then one record per retest round: a run stopped
in its rounds (watchdog, lost host) parses as `partial` with the pairs of the
rounds it finished (no suspects: the analysis needs them all), and one stopped
during the retests as `partial` with the suspects it did not retest named."""

from __future__ import annotations

import bisect
import dataclasses
import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import click

from rmax.families.bisect import GROUPS_HELP
from rmax.bench.family import Family, Summary, SurveyPlan, option, register
from rmax.bench.netlaunch import (MAX_MESSAGE, MESSAGE, cell, check_memory, check_message_sizes, groups_argv,
                                  header_summary, require_ranks, split_records)
from rmax.bench.runner import Parsed
from rmax.bench.view import Figure, Plot, Table, View, figure
from rmax.native import executable
from rmax.params import TOPOLOGY, Count, Seconds, Size
from rmax.stats import differ_significantly, robust_sd
from rmax.topology.sources import known_groups

SCHEMA = "rmax.matrix/2"             # the kernel's records
LAT_FACTOR, BW_FRACTION = 2.0, 0.9   # the suspect margins, as in native/net/matrix.h
SAMPLE_ABOVE = 64                    # --design auto: every pair up to this many ranks (MX_SAMPLE_ABOVE)
QUICK_SAMPLE_ABOVE = 16              # with --quick: 48 virtual nodes on 2 cores took ~47 s a round, 37 min in all
TABLE_RANKS = 32                     # wider matrices are plotted, not printed
PAIR_FIGURES_RANKS = 64              # a figure per pair up to this many ranks; class medians always
SHOWN_SUSPECTS = 40                  # rows of the suspects table (the most severe)
STATISTIC = ("per pair: median over samples, all pairs of a round at once (concurrent); latency one-way; "
             "suspects also retested in rounds of disjoint pairs, median over retests")
NOT_RETESTED = "not retested"


def auto_design(ranks: int, quick: bool) -> str:
    """--design auto: every pair up to SAMPLE_ABOVE ranks (QUICK_SAMPLE_ABOVE with --quick), else sampled."""
    return "sampled" if ranks > (QUICK_SAMPLE_ABOVE if quick else SAMPLE_ABOVE) else "full"


# Where the ranks crowd the cores (a virtual cluster's nodes share this host's), a round's pairs all
# at once measure their share of the cores, not their links: 48 ranks on 2 cores gave same-switch
# 3.3 against across-switch 1.7 MB/s (1 Gbit/s links, 100 Mbit/s trunks); two pairs a core at once,
# the round's other ranks asleep, gave 19.9 against 11.5. A virtual link's tbf moves messages from
# 64 KiB up at its rate, and 3 samples still give a median and a spread (no warm-up batch).
PAIRS_PER_CORE = 2
CROWDED_BW_SIZE = 64 << 10
CROWDED_SAMPLES = 3
SIZED = ("pairs_at_once", "bw_size", "min_samples")   # what crowded_sizes chooses


def crowded_sizes(o, per_core: float, cores: int, given: tuple[str, ...] = ()) -> dict:
    """The sizes of a matrix whose ranks are `per_core` to each of `cores` cores (per_core <= 1: the
    options as they are): at most PAIRS_PER_CORE pairs a core at once, CROWDED_BW_SIZE messages at
    most, CROWDED_SAMPLES samples at least. Options named in `given` (the user's) are kept.
    The one owner of this knowledge: `bench matrix` applies it (Matrix.execute), and the survey's
    plan starts from it before fitting the rounds to its seconds (survey/plan.py, matrix)."""
    out = {k: getattr(o, k) for k in SIZED}
    if per_core <= 1:
        return out
    if "pairs_at_once" not in given and not o.pairs_at_once:
        out["pairs_at_once"] = max(1, PAIRS_PER_CORE * cores)
    if "bw_size" not in given:
        out["bw_size"] = min(o.bw_size, CROWDED_BW_SIZE)
    if "min_samples" not in given:
        out["min_samples"] = min(o.min_samples, CROWDED_SAMPLES)
    return out


def _sizing_line(o, sized: dict, per_core: float, cores: int) -> str:
    """What the run measures with and why: the line `bench matrix` prints and stores."""
    mine = [k for k in SIZED if sized[k] != getattr(o, k)]
    kept = [k for k in SIZED if k in o.given]
    at_once = sized["pairs_at_once"] or "every pair of a round"
    why = (f"{per_core:.3g} ranks per core of {cores}: sized for crowded cores" if mine else
           f"{per_core:.3g} ranks per core of {cores}" + (": not crowded" if per_core <= 1 else ""))
    return (f"pairs at once {at_once}, bandwidth message {_kib(sized['bw_size'])}, {sized['min_samples']} samples "
            f"at least, shifts {o.shifts or 'all'} ({why}"
            + (f"; set by the user: {', '.join(k.replace('_', '-') for k in kept)}" if kept else "") + ")")


def _kib(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 and not n % (1 << 20) else f"{n >> 10} KiB" if not n % 1024 else f"{n} B"


def ranks_per_core(ctx, ranks: int) -> tuple[float, int]:
    """(ranks per core, cores) of the machine this run's ranks crowd: a virtual cluster's all share
    this host's cores; elsewhere the ranks on this host, if any (the others' hosts assumed alike)."""
    from rmax.launch import local_slots

    cores = local_slots()
    here = ranks if ctx.launcher == "vcluster" else (ctx.spec.ranks_on_this_host() if ctx.spec else ranks)
    return max(1.0, here / max(1, cores)), cores


@dataclass
class MatrixOptions:
    lat_size: int = option(8, "Latency message size.", type=MESSAGE)
    bw_size: int = option(1 << 20, "Bandwidth message size.", type=Size(1, MAX_MESSAGE), quick=256 << 10,
                          show="1MiB")
    window: int = option(8, "Messages in flight per pair for the bandwidth.", type=Count(1, 1024))
    budget: float = option(0.01, "Seconds per pair and measurement.", type=Seconds(0.001, 3600, lo_open=False),
                           quick=0.003)
    max_samples: int = option(20, "Most samples per pair.", type=Count(5, 100000), quick=10, cli=False)
    min_samples: int = option(5, "Fewest samples per pair and measurement (the survey's plan lowers it where ranks "
                                 "crowd few cores: below 5, no warm-up batch either).", type=Count(2, 100000), cli=False)
    design: str = option("auto", f"Pairs measured: every pair (full), or every pair inside a switch plus O(log N) "
                                 f"shifts (sampled); auto: full up to {SAMPLE_ABOVE} ranks ({QUICK_SAMPLE_ABOVE} "
                                 "with --quick).",
                         type=click.Choice(["auto", "full", "sampled"]))
    shifts: int = option(0, "The sampled design's shifts at most (0: all, about 2 log2 N), spread from the nearest "
                            "to the farthest.", type=Count(0, 64))
    pairs_at_once: int = option(0, "Pairs measured at once at most (0: every pair of a round). Where the ranks "
                                   "crowd few cores (a virtual cluster's) the plan lowers it, so that a pair's "
                                   "bandwidth is its links', not its share of the cores.", type=Count(0, 1 << 20))
    rounds_budget: float = option(0.0, "Seconds for the rounds (0: no limit): the rounds then run in a shuffled "
                                       "order, each a sample of the design, and none starts that would end later "
                                       "(the survey's plan sets it to the step's share).",
                                  type=Seconds(0, 86400, lo_open=False))
    retest: bool = option(True, "Report suspects without measuring them again.", flag="--no-retest")
    retests: int = option(3, "Retests per suspect (Welch's t-test against its control needs 2 or more).",
                          type=Count(1, 100))
    retest_budget: float = option(120.0, "Seconds for the retests: no retest round starts that would end later; "
                                         "the suspects left are listed as not retested.",
                                  type=Seconds(0, 86400, lo_open=False), quick=30.0)
    topology: str | None = option(None, GROUPS_HELP, type=TOPOLOGY)
    # the switch groups found for the run (rmax.topology.sources.known_groups), and where from
    groups: tuple[tuple[str, ...], ...] | None = option(None, "Switch groups of hosts.", cli=False)
    groups_source: str | None = option(None, "Where the switch groups came from.", cli=False)
    # the options the user set (Matrix.options): crowded_sizes keeps them; what it chose, in words
    given: tuple[str, ...] = option((), "Options the user set.", cli=False)
    sizing: str = option("", "How the crowded sizes were chosen.", cli=False)


@dataclass
class Suspect:
    """A pair far from its class under load, and what measuring it again said."""

    from_rank: int
    to_rank: int
    kind: str                        # latency | bandwidth
    pair_class: str                  # same | across (switches) | all (groups unknown)
    concurrent: float | None         # s or bytes/s, under the round's load
    alone: list[float | None]        # the retests (in rounds of disjoint pairs)
    from_host: str | None
    to_host: str | None
    alone_median: float | None
    class_median: float | None
    p: float | None                  # Welch's t-test, retest values against the control's (else the class's pairs)
    flagged: bool
    # flagged | contention | slow alone, not significant | CPU shared | untested | not retested: <why>
    verdict: str
    control_pair: list[int] | None = None   # [from, to] ranks of the control, measured in turn
    control: list[float | None] = ()
    control_median: float | None = None
    alone_cpu_shared: list[bool] = ()       # per retest value: its two ranks ran on one CPU (left out)
    control_cpu_shared: list[bool] = ()
    reference: str = ""                     # what the retests were tested against: control | class


@dataclass
class ClassStat:
    """One class of pairs of one kind, from the concurrent rounds."""

    kind: str                        # latency | bandwidth
    pair_class: str                  # same | across | all
    pairs: int                       # measured pairs (latency: each pair once; bandwidth: each direction)
    median: float | None
    spread: float | None             # 1.4826 x the median absolute deviation


@dataclass
class MatrixSummary(Summary):
    SCHEMA = "rmax.matrix/3"
    READS = ("rmax.matrix/2",)       # /3 added the design, pair counts, class statistics and retest status
    hosts: list[str]                 # each rank's host
    labels: list[str]                # each rank by its host; host:rank where a host has several
    latency: list[list[float | None]]      # s, row = from, column = to; None: not measured
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
    design: str = "full"                   # full | sampled
    pairs: int | None = None               # unordered pairs measured
    pairs_total: int | None = None         # unordered pairs of distinct ranks
    class_stats: list[ClassStat] = ()
    retest_budget: float | None = None     # s
    retest_status: str = ""                # off | done | budget used up | not finished
    pairs_at_once: int | None = None       # pairs measured at once at most (0: every pair of a round)
    shifts: int | None = None              # the sampled design's shifts at most (0: all)
    sizing: str = ""                       # how pairs at once, message size and samples were chosen
    rounds_budget: float | None = None     # s for the rounds (0: no limit)
    rounds_run: int | None = None          # rounds run, when the rounds budget ended them early

    @property
    def flagged(self) -> list[Suspect]:
        return [s for s in self.suspects if s.flagged]

    @property
    def contention(self) -> list[Suspect]:
        return [s for s in self.suspects if s.verdict == "contention"]

    @property
    def not_retested(self) -> list[Suspect]:
        return [s for s in self.suspects if s.verdict.startswith(NOT_RETESTED)]


def labels(hosts: list[str]) -> list[str]:
    """Each rank by its host; host:rank where a host has several ranks."""
    many = {h for h in hosts if hosts.count(h) > 1}
    return [f"{h}:{r}" if h in many else h for r, h in enumerate(hosts)]


class _ClassValues:
    """Each class's concurrent values of one kind, sorted once (latency: each pair once), so that a
    suspect's class median without its own values costs a bisection, not a pass over the matrix."""

    def __init__(self, m: list, group_of: list[int], kind: str):
        self.m, self.group_of, self.kind = m, group_of, kind
        self.sorted: dict[bool, list[float]] = {False: [], True: []}
        for a, row in enumerate(m):
            for b, v in enumerate(row):
                if a != b and (kind == "bandwidth" or a < b) and v is not None:
                    self.sorted[self.cls(a, b)].append(v)
        for v in self.sorted.values():
            v.sort()

    def cls(self, a: int, b: int) -> bool:
        return bool(self.group_of) and self.group_of[a] != self.group_of[b]

    def _own(self, i: int, j: int) -> list[float]:
        cells = [(i, j), (j, i)] if self.kind == "bandwidth" else [(min(i, j), max(i, j))]
        return [self.m[a][b] for a, b in cells if self.m[a][b] is not None]

    def without(self, i: int, j: int) -> list[float]:
        """The values of the other pairs of (i, j)'s class."""
        rest = list(self.sorted[self.cls(i, j)])
        for v in self._own(i, j):
            rest.pop(bisect.bisect_left(rest, v))
        return rest

    def median_without(self, i: int, j: int) -> float | None:
        """median(without(i, j)) in O(log n)."""
        xs, own = self.sorted[self.cls(i, j)], []
        for v in sorted(self._own(i, j)):   # the own values' places in xs (equal ones at successive places)
            own.append(bisect.bisect_left(xs, v, own[-1] + 1 if own and xs[own[-1]] == v else 0))
        k = len(xs) - len(own)
        if k <= 0:
            return None

        def at(q: int) -> float:   # the q-th value once the own ones are left out
            for idx in own:
                q += idx <= q
            return xs[q]
        return at(k // 2) if k % 2 else 0.5 * (at(k // 2 - 1) + at(k // 2))


def suspect_verdict(sus: dict, class_values: Sequence[float] | Callable[[], Sequence[float]],
            class_median: float | None = None) -> dict:
    """Flagged: retested still beyond the margin of the reference, and Welch's t-test over the logarithms
    of (retest values, reference values) significant. The reference is the control measured in turn
    with the suspect when there is one (2 values or more), else the class's concurrent values
    (`class_values`, or a function giving them: only called then; `class_median` their median when
    known). Values taken with the pair's two ranks on one CPU are left out; a suspect left with
    fewer than 2 is "CPU shared". Contention: a suspect within the margin on retest (the concurrent
    load slowed it); untested: no reference, or a single retest value."""
    def ok(vals, shared=()):
        shared = list(shared or ())
        return [v for k, v in enumerate(vals or []) if v is not None and v > 0      # NaN > 0 is false
                and not (k < len(shared) and shared[k])]

    cache: list[list[float]] = []

    def class_list() -> list[float]:   # the class's values, made at most once
        if not cache:
            cache.append(list(class_values() if callable(class_values) else class_values))
        return cache[0]

    every = ok(sus.get("alone"))
    alone, control = ok(sus.get("alone"), sus.get("alone_cpu_shared")), \
        ok(sus.get("control"), sus.get("control_cpu_shared"))
    if class_median is None and class_list():
        class_median = statistics.median(class_list())
    ref_values = control if len(control) >= 2 else class_list()
    out = {"alone_median": statistics.median(alone or every) if every else None, "class_median": class_median,
           "control_median": statistics.median(control) if control else None, "p": None,
           "reference": "control" if len(control) >= 2 else "class"}
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


def _not_retested_why(sus: dict, retesting: bool, finished: bool) -> str:
    if not retesting:
        return f"{NOT_RETESTED}: --no-retest"
    if "retest_round" not in sus:
        return f"{NOT_RETESTED}: beyond the most severe"
    return f"{NOT_RETESTED}: {'budget used up' if finished else 'run stopped'}"


def _suspect(sus: dict, classes: dict[str, _ClassValues], hosts: list[str], retesting: bool,
             finished: bool) -> Suspect:
    c = classes[sus["kind"]]
    i, j = sus["from"], sus["to"]
    med = c.median_without(i, j)
    pair = [sus["control_from"], sus["control_to"]] if "control_from" in sus else None
    if "alone" in sus:
        v = suspect_verdict(sus, lambda: c.without(i, j), med)
    else:
        v = {"alone_median": None, "class_median": med, "control_median": None, "p": None, "flagged": False,
             "verdict": _not_retested_why(sus, retesting, finished), "reference": ""}
    return Suspect(i, j, sus["kind"], sus["class"], sus.get("concurrent"), sus.get("alone") or [],
                   hosts[i] if i < len(hosts) else None, hosts[j] if j < len(hosts) else None, v["alone_median"],
                   v["class_median"], v["p"], v["flagged"], v["verdict"], pair, sus.get("control") or [],
                   v["control_median"], [bool(x) for x in sus.get("alone_cpu_shared") or []],
                   [bool(x) for x in sus.get("control_cpu_shared") or []], v["reference"])


def _from_rounds(records: list[dict], n: int, group_of: list[int]) -> dict | None:
    """A matrix record made from the kernel's per-round records, for a run stopped in its rounds (no
    matrix record): the pairs of the rounds it finished, their class statistics, no suspects; None
    when it finished no round."""
    rounds = [r for r in records if r.get("schema") == SCHEMA and r.get("record") == "round"]
    if not rounds or n < 2:
        return None
    names = ("latency", "latency_best", "bandwidth", "bandwidth_best", "cpu_shared")
    m: dict = {k: [[None] * n for _ in range(n)] for k in names}
    for rec in rounds:
        for got in rec.get("cells", []):
            a, b, *vals = got
            if not (0 <= a < n and 0 <= b < n):
                continue
            for k, v in zip(names, vals):
                if v is not None:
                    m[k][a][b] = v
                    if k.startswith("latency"):     # measured once, by the lower rank: kept in both cells
                        m[k][b][a] = v
    m["cpu_shared"] = [[bool(v) for v in row] for row in m["cpu_shared"]]
    m["class_stats"] = _class_stats(m["latency"], m["bandwidth"], group_of)
    m["validated"] = all(r.get("validated", True) for r in rounds)
    m["rounds_done"] = len(rounds)
    return m


def pair_class(group_of: Sequence[int], a: int, b: int) -> str:
    """The class of the pair of ranks a, b: within one switch, across switches, or every pair when the
    switch groups are unknown (group_of empty), as the kernel's classes (matrix_suspects.c)."""
    return "all" if not group_of else "across" if group_of[a] != group_of[b] else "same"


def _class_stats(lat: list, bw: list, group_of: list[int]) -> list[dict]:
    """As the kernel's class statistics (matrix_suspects.c): per kind and class, the pairs, their
    median and 1.4826 x the median absolute deviation."""
    out = []
    for kind, mat in (("latency", lat), ("bandwidth", bw)):
        by: dict[str, list[float]] = {}
        for a, row in enumerate(mat):
            for b, v in enumerate(row):
                if a != b and v is not None and (kind == "bandwidth" or a < b):
                    by.setdefault(pair_class(group_of, a, b), []).append(v)
        for cls in (("all",) if not group_of else ("same", "across")):
            vals = by.get(cls, [])
            out.append({"kind": kind, "class": cls, "pairs": len(vals),
                        "median": statistics.median(vals) if vals else None,
                        "spread": robust_sd(vals) if vals else None})
    return out


def _retest_status(header: dict, done: dict | None) -> str:
    if not header.get("retesting", True):
        return "off"
    if done is None:
        return "not finished"
    return "budget used up" if done.get("retest_budget_used_up") else "done"


@register
class Matrix(Family):
    """All-pairs latency and bandwidth matrices in rounds of concurrent disjoint pairs (a sample of
    the pairs above 64 ranks); a pair far from its class (same switch, across switches) is measured
    again, and flagged only when it still differs significantly from a control measured with it."""

    name = "matrix"
    native = ("rmax-net", "matrix")
    title = "all-pairs latency and bandwidth matrices"
    Options = MatrixOptions
    Summary = MatrixSummary
    scope = "net"
    default_np = None
    survey = SurveyPlan("all-pairs latency and bandwidth", 0.05, 43, ranks="all")
    example = "rmax bench matrix --hostfile hosts"

    def options(self, quick: bool = False, **given):
        """As every family's, with the names of the options given kept, so that the crowded sizes
        (crowded_sizes) replace only the others."""
        o = super().options(quick, **given)
        return dataclasses.replace(o, given=tuple(sorted(k for k, v in given.items() if v is not None)))

    def check(self, o, ctx):
        np_ = self.ranks(ctx)
        require_ranks(np_, "the all-pairs matrix", minimum=2)
        check_message_sizes([o.lat_size, o.bw_size])
        check_memory(2 * max(o.lat_size, o.bw_size), ctx.spec.ranks_on_this_host() if ctx.spec else np_,
                     "the send and receive buffers")

    def execute(self, o, ctx):
        found, source = known_groups(o.topology, ctx.launcher)
        groups = tuple(tuple(g) for g in found) if found else None
        n = self.ranks(ctx)
        design = o.design if o.design != "auto" else auto_design(n, ctx.quick)
        per_core, cores = ranks_per_core(ctx, n)
        sized = crowded_sizes(o, per_core, cores, o.given)
        o = dataclasses.replace(o, groups=groups, groups_source=source, design=design, **sized,
                                sizing=_sizing_line(o, sized, per_core, cores))
        return super().execute(o, ctx)

    def parser(self, o, ctx):
        def parse(records):
            got = self.parse(records)
            got.summary.sizing = o.sizing
            return got
        return parse

    def argv(self, o):
        a = [executable("rmax-net"), "matrix", "--json", "-", "--lat-size", str(o.lat_size), "--bw-size",
             str(o.bw_size), "--window", str(o.window), "--budget", str(o.budget), "--max-samples",
             str(o.max_samples), "--min-samples", str(o.min_samples), "--design", o.design, "--shifts",
             str(o.shifts), "--pairs-at-once", str(o.pairs_at_once), "--retests", str(o.retests),
             "--retest-budget", str(o.retest_budget), "--rounds-budget", str(o.rounds_budget),
             *groups_argv(o.groups)]
        return a + ([] if o.retest else ["--no-retest"])

    def parse(self, records):
        """The kernel's records, also when it stopped early: with the matrix record, a summary (status
        `partial` when the retests did not finish); without it, `failed`."""
        header, _, done = split_records(records, SCHEMA)
        m = next((r for r in records if r.get("schema") == SCHEMA and r.get("record") == "matrix"), None)
        h = header or {}
        hosts = h.get("hosts") or []
        group_of = h.get("group_of") or []
        retested = {x["suspect"]: x for r in records if r.get("schema") == SCHEMA and r.get("record") == "retests"
                    for x in r.get("suspects", []) if isinstance(x.get("suspect"), int)}
        summary = MatrixSummary(
            **header_summary(header), labels=labels(hosts), latency=[], bandwidth=[], lat_size=h.get("lat_size"),
            bw_size=h.get("bw_size"), rounds=h.get("rounds"), retests=h.get("retests"),
            classes="same switch / across switches" if group_of else "all pairs (switch groups unknown)",
            group_of=group_of, design=h.get("design", "full"), pairs=h.get("pairs"), pairs_total=h.get("pairs_total"),
            retest_budget=h.get("retest_budget"), pairs_at_once=h.get("pairs_at_once"), shifts=h.get("shifts"),
            rounds_budget=h.get("rounds_budget"))
        if m is None:
            m = _from_rounds(records, len(hosts), group_of)
            if m is None:
                return Parsed(summary, {}, "failed", "rmax-net matrix wrote no matrix")
        classes = {k: _ClassValues(m[k], group_of, k) for k in ("latency", "bandwidth")}
        retesting = h.get("retesting", True)
        summary.latency, summary.bandwidth = m["latency"], m["bandwidth"]
        summary.cpu_shared = [[bool(v) for v in row] for row in m.get("cpu_shared", [])]
        summary.class_stats = [ClassStat(c["kind"], c["class"], c["pairs"], c.get("median"), c.get("spread"))
                               for c in m.get("class_stats", [])]
        summary.suspects = [_suspect({**x, **retested.get(k, {})}, classes, hosts, retesting, done is not None)
                            for k, x in enumerate(m.get("suspects", []))]
        summary.retest_status = _retest_status(h, done)
        if done and done.get("rounds_budget_used_up"):   # the pairs of the rounds run, not of the design
            summary.rounds_run = done.get("rounds_run")
            summary.pairs = sum(v is not None for i, row in enumerate(summary.latency) for v in row[i + 1:])
        # each pair's best sample (latency: the lower rank's row, copied to both cells)
        samples = {"latency_best": m.get("latency_best", []), "bandwidth_best": m.get("bandwidth_best", [])}
        if not m.get("validated") or (done is not None and not done.get("validated", True)):
            return Parsed(summary, samples, "invalid", "payload validation failed for some pair")
        if m.get("rounds_done") is not None:
            return Parsed(summary, samples, "partial",
                          f"rmax-net matrix stopped after round {m['rounds_done']} of {h.get('rounds')}: the pairs "
                          f"of the rounds measured are kept, without suspects or retests")
        if done is None:
            return Parsed(summary, samples, "partial",
                          f"rmax-net matrix stopped during the retests: the concurrent matrix is kept, "
                          f"{len(summary.not_retested)} of {len(summary.suspects)} suspects not retested")
        return Parsed(summary, samples)

    def metrics(self, s: MatrixSummary) -> list[Figure]:
        lat = {True: ("us", 1e6, "lower"), False: ("MB/s", 1e-6, "higher")}
        out = [figure(s, ("class_stats", k, "median"), f"{c.kind}.{c.pair_class}.median",
                      f"{c.kind}, median over the {c.pair_class} class (concurrent)", lat[c.kind == "latency"][0],
                      STATISTIC, scale=lat[c.kind == "latency"][1], better=lat[c.kind == "latency"][2])
               for k, c in enumerate(s.class_stats)]
        if len(s.labels) <= PAIR_FIGURES_RANKS:
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
        sampled = f"sampled: {s.pairs} of {s.pairs_total} pairs" if s.design == "sampled" else "every pair"
        what = (f"concurrent: {len(names)} ranks, {s.rounds} rounds of disjoint pairs at once, {sampled}; "
                f"classes: {s.classes}")
        if len(names) <= TABLE_RANKS:
            for kind, unit, scale, spec in (("latency", "Latency (us)", 1e6, ".2f"),
                                            ("bandwidth", "Bandwidth (MB/s)", 1e-6, ".0f")):
                rows = [[names[i], *("—" if i == j else cell(v, scale, spec) for j, v in enumerate(row))]
                        for i, row in enumerate(getattr(s, kind))]
                tables.append(Table(["From \\ to", *names], rows, f"{unit}, {what}"))
        if s.class_stats:
            unit = {"latency": (1e6, ".3g"), "bandwidth": (1e-6, ".3g")}
            rows = [[c.kind, c.pair_class, str(c.pairs), *(cell(v, *unit[c.kind]) for v in (c.median, c.spread))]
                    for c in s.class_stats]
            tables.append(Table(["Kind", "Class", "Pairs", "Median", "Spread (1.48 MAD)"], rows,
                                f"classes of pairs (latency us, bandwidth MB/s), {what}", left=2))
        if s.suspects:
            rows = []
            for x in s.suspects[:SHOWN_SUSPECTS]:
                sc, sp = (1e6, ".2f") if x.kind == "latency" else (1e-6, ".0f")
                ctl = (f"{names[x.control_pair[0]]} to {names[x.control_pair[1]]}: {cell(x.control_median, sc, sp)}"
                       if x.control_pair else "none")
                rows.append([names[x.from_rank], names[x.to_rank], x.kind, x.pair_class, cell(x.concurrent, sc, sp),
                             cell(x.alone_median, sc, sp), ctl, cell(x.class_median, sc, sp), cell(x.p, 1, ".3f"),
                             x.verdict.upper() if x.flagged else x.verdict])
            more = f"; the {len(s.suspects) - SHOWN_SUSPECTS} less severe are not shown" \
                if len(s.suspects) > SHOWN_SUSPECTS else ""
            tables.append(Table(["From", "To", "Kind", "Class", "Concurrent", "Retest", "Control retest",
                                 "Class median (concurrent)", "p", "Verdict"],
                                rows, f"suspects, most severe first, retested {s.retests} times each in rounds of "
                                      "disjoint pairs, in turn with a control pair of their class; p: Welch's test "
                                      f"against the control (else the class) (latency us, bandwidth MB/s){more}",
                                left=4))
        notes = [s.sizing] if s.sizing else []
        if s.rounds_run is not None:
            notes.append(f"rounds budget used up: {s.rounds_run} of {s.rounds} rounds run in its {s.rounds_budget:g} s, "
                         f"in a shuffled order (a sample of the design's pairs)")
        if s.design == "sampled":
            notes.append(f"sampled: {s.pairs} of {s.pairs_total} pairs (every pair inside a switch when the switches "
                         "are known, and O(log N) shifts); the others were not measured")
        notes.append(f"{len(s.suspects)} suspects, {len(s.flagged)} flagged, {len(s.contention)} slowed only by the "
                     "concurrent load")
        left = s.not_retested
        if left and s.retest_status != "off":
            why = {"not finished": "the run stopped during the retests",
                   "budget used up": f"the {s.retest_budget:g} s retest budget was used up"}.get(
                s.retest_status, "only the most severe are retested")
            notes.append(f"retests {s.retest_status}: {len(left)} of {len(s.suspects)} suspects not retested ({why}): "
                         + ", ".join(f"{x.kind} {names[x.from_rank]} to {names[x.to_rank]}" for x in left[:10])
                         + (", ..." if len(left) > 10 else ""))
        pairs = sum(v for i, row in enumerate(s.cpu_shared) for j, v in enumerate(row) if i < j)
        if pairs:
            notes.append(f"{pairs} pairs ran with their two ranks on one CPU in the concurrent rounds: those cells "
                         "measure the CPU as well as the network")
        shared = sum(map(sum, (x.alone_cpu_shared for x in s.suspects))) + \
            sum(map(sum, (x.control_cpu_shared for x in s.suspects)))
        if shared:
            notes.append(f"{shared} retests ran with the pair's two ranks on one CPU: they measured that "
                         "CPU, not the network, and were left out")
        for f in s.flagged:
            sc, unit = (1e6, "us") if f.kind == "latency" else (1e-6, "MB/s")
            notes.append(f"flagged: {f.kind} from {f.from_host or f.from_rank} to {f.to_host or f.to_rank} "
                         f"({f.pair_class} switch class): {cell(f.concurrent, sc, '.3g')} {unit} concurrent, "
                         f"{cell(f.alone_median, sc, '.3g')} on retest vs "
                         + (f"{cell(f.control_median, sc, '.3g')} for its control "
                            f"{names[f.control_pair[0]]} to {names[f.control_pair[1]]} at the same time"
                            if f.reference == "control" else f"class median {cell(f.class_median, sc, '.3g')}")
                         + f" (Welch p={cell(f.p, 1, '.3g')})")
        data = [{"from": i, "to": j, "latency_s": v,
                 "bandwidth_Bps": s.bandwidth[i][j] if i < len(s.bandwidth) else None}
                for i, row in enumerate(s.latency) for j, v in enumerate(row)
                if i != j and (v is not None or (i < len(s.bandwidth) and s.bandwidth[i][j] is not None))]
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
