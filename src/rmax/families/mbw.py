"""mbw: aggregate bandwidth and message rate of concurrent sender/receiver pairs, the method
of OSU's osu_mbw_mr (native/net/cmd_mbw.c): rank i of the first half sends windows of
non-blocking messages to rank i + n/2, each window acknowledged; every size is measured
in several repeats and reported as the median of its repeats."""

from __future__ import annotations

from dataclasses import dataclass, field

from rmax.bench.family import POLLING_RANKS_PER_CORE, Family, Summary, SurveyPlan, option, register
from rmax.bench.netlaunch import MAX_MESSAGE, check_memory, header_summary, require_ranks, split_records, parsed_records
from rmax.bench.view import Figure, Plot, Table, View, figure
from rmax.errors import RmaxError
from rmax.native import executable
from rmax.params import Count, Seconds, Size, SizeList
from rmax.sizes import human_size
from rmax.stats import spread

SCHEMA = "rmax.mbw/1"
MEDIAN = "median over repeats"


@dataclass
class MbwOptions:
    sizes: tuple[int, ...] | None = option(None, "Message sizes instead of the schedule, e.g. 8,64K,1MiB.",
                                           type=SizeList(0, MAX_MESSAGE))
    max_size: int = option(4 << 20, "Largest size of the schedule (1 B to it: 2^k and 3x2^(k-1)).",
                           type=Size(1, MAX_MESSAGE), quick=64 << 10)
    window: int = option(64, "Messages each sender keeps in flight per iteration (OSU's default).",
                         type=Count(1, 1024))
    window_bytes: int = option(8 << 20, "Bytes each sender keeps in flight at most (0: no bound): a large message "
                               "gets a shorter window.", type=Size(0, 1 << 40), show="8MiB")
    min_samples: int = option(5, "Fewest samples per size and repeat (the survey's plan lowers it where ranks crowd "
                                 "few cores: below 5, no warm-up batch either).", type=Count(2, 100000), cli=False)
    budget: float = option(0.05, "Seconds of timed repetitions per size and repeat.",
                           type=Seconds(0.001, 3600, lo_open=False),
                           quick=0.005)
    repeats: int = option(5, "Times the whole size list is measured, one repeat after the other.",
                          type=Count(1, 1000), quick=3)
    validate: bool = option(False, "Check every byte of every window (slower; marks are always checked).",
                            flag="--validate")
    self_test_corrupt: bool = option(False, "Rank 0 damages what it sends: the run must come out invalid.",
                                     flag="--self-test-corrupt")


@dataclass
class MbwPoint:
    size: int
    pairs: int
    window: int
    iterations: int                 # timed iterations (one window per pair each), all repeats
    seconds: float                  # their time: each batch as long as its slowest rank
    validated: bool
    converged: bool                 # every repeat met its 2% confidence target
    message_rate: float | None = None        # messages/s of all pairs, median over repeats
    bandwidth: float | None = None           # bytes/s of all pairs (message_rate x size)
    message_rate_repeats: list[float] = field(default_factory=list)
    bandwidth_repeats: list[float] = field(default_factory=list)
    iterations_repeats: list[int] = field(default_factory=list)
    seconds_repeats: list[float] = field(default_factory=list)
    spread: float | None = None     # (max - min) / median of the repeats' message rates
    stable: bool | None = None      # the repeats agree within rmax.stats.STABLE_SPREAD


@dataclass
class MbwSummary(Summary):
    SCHEMA = SCHEMA
    points: list[MbwPoint]
    pairs: int
    window: int
    repeats: int
    hosts: list[str] = field(default_factory=list)
    mpi_library: str | None = None
    statistic: str = MEDIAN

    def valid(self) -> list[tuple[int, MbwPoint]]:
        """(index, point) of every validated point with a rate, by size."""
        return sorted(((i, p) for i, p in enumerate(self.points) if p.validated and p.message_rate),
                      key=lambda ip: ip[1].size)


def _point(r: dict) -> MbwPoint:
    sp = spread(r.get("message_rate_repeats", []))
    return MbwPoint(r["size"], r["pairs"], r["window"], r["iterations"], r["seconds"], bool(r["validated"]),
                    bool(r["converged"]), r.get("message_rate"), r.get("bandwidth"),
                    list(r.get("message_rate_repeats", [])), list(r.get("bandwidth_repeats", [])),
                    list(r.get("iterations_repeats", [])), list(r.get("seconds_repeats", [])), sp["spread"],
                    sp["stable"])


def _pairs(n: int) -> str:
    return f"{n} pair{'s' if n != 1 else ''}"


@register
class Mbw(Family):
    """Aggregate bandwidth and message rate of concurrent pairs (OSU osu_mbw_mr's method):
    rank i of the first half sends windows of messages to rank i + n/2, each window
    acknowledged; the rate counts every pair's messages over the slowest rank's time.
    Needs an even number of ranks; the median of --repeats repeats is reported."""

    name = "mbw"
    native = ("rmax-net", "mbw")
    title = "concurrent pairs: aggregate bandwidth and message rate (OSU mbw_mr)"
    Options = MbwOptions
    Summary = MbwSummary
    scope = "net"
    default_np = 2
    survey = SurveyPlan("Multi-pair bandwidth and message rate", 0.03, 44, ranks="all", even=True,
                        per_core=POLLING_RANKS_PER_CORE)
    example = "rmax bench mbw --np 4 --max-size 1MiB"

    def check(self, o, ctx):
        np_ = ctx.spec.np if ctx.spec else self.default_np
        require_ranks(np_, "mbw (sender/receiver pairs)", minimum=2)
        if np_ % 2:
            raise RmaxError(f"mbw needs an even number of ranks (pairs), not {np_}",
                            hint=f"pass --np {np_ + 1} or --np {np_ - 1}" if np_ > 2 else "pass --np 2")
        largest = max(o.sizes) if o.sizes else o.max_size
        check_memory(largest, ctx.spec.ranks_on_this_host() if ctx.spec else np_, "mbw's message buffers")

    def argv(self, o):
        a = [executable("rmax-net"), "mbw", "--json", "-", "--window", str(o.window), "--window-bytes",
             str(o.window_bytes), "--budget", str(o.budget), "--repeats", str(o.repeats), "--min-samples",
             str(o.min_samples)]
        # one point per size, in order: a figure's key names its size
        a += ["--sizes", ",".join(map(str, sorted(set(o.sizes))))] if o.sizes else ["--max-size", str(o.max_size)]
        if o.validate:
            a.append("--validate")
        if o.self_test_corrupt:
            a.append("--self-test-corrupt")
        return a

    def timeout(self, o):
        # Past its budget a point takes eight batches at least (calibration, warm-up, five samples),
        # each of one window (at most window_bytes) or more; 100 MB/s is slower than any link MPI runs over.
        points = len(o.sizes) if o.sizes else 2 * o.max_size.bit_length()
        volume = sum(o.sizes) if o.sizes else 4 * o.max_size      # the schedule's sizes sum to < 3.5x its largest
        window = min(o.window * volume, o.window_bytes * points) if o.window_bytes else o.window * volume
        return 120.0 + o.repeats * (3.0 * points * o.budget + 8 * window / 1e8)

    def parse(self, records):
        header, recs, done = split_records(records, SCHEMA)
        head = header or {}
        points = [_point(r) for r in recs]
        summary = MbwSummary(points, head.get("pairs", 0), head.get("window", 0), head.get("repeats", 0),
                             **header_summary(header))
        samples = {str(p.size): p.message_rate_repeats for p in points}
        bad = [human_size(p.size) for p in points if not p.validated]
        return parsed_records(summary, samples, bad, done, "payload validation failed at",
                       "rmax-net mbw stopped before its last point")

    def _bandwidth(self, s: MbwSummary, i: int, p: MbwPoint) -> Figure | None:
        return figure(s, ("points", i, "bandwidth"), f"bandwidth.{p.size}",
                      f"Aggregate bandwidth, {_pairs(p.pairs)}, {human_size(p.size)}", "MB/s", MEDIAN,
                      scale=1e-6, repeats=("points", i, "bandwidth_repeats"))

    def _rate(self, s: MbwSummary, i: int, p: MbwPoint) -> Figure | None:
        return figure(s, ("points", i, "message_rate"), f"rate.{p.size}",
                      f"Message rate, {_pairs(p.pairs)}, {human_size(p.size)}", "M messages/s", MEDIAN,
                      scale=1e-6, repeats=("points", i, "message_rate_repeats"))

    def headline(self, s: MbwSummary) -> list[Figure]:
        good = s.valid()
        sized = [(i, p) for i, p in good if p.size > 0]     # zero bytes have no bandwidth to show
        out = ([self._bandwidth(s, *sized[-1])] if sized else []) + ([self._rate(s, *good[0])] if good else [])
        return [f for f in out if f]

    def metrics(self, s: MbwSummary) -> list[Figure]:
        out = [f(s, i, p) for i, p in s.valid() for f in (self._bandwidth, self._rate)]
        return [f for f in out if f]

    def view(self, s: MbwSummary) -> View:
        rows = []
        for p in sorted(s.points, key=lambda p: p.size):
            if not p.validated or not p.message_rate:
                rows.append([human_size(p.size), str(p.pairs), "INVALID" if not p.validated else "—", "—", "—"])
                continue
            rows.append([human_size(p.size), str(p.pairs), f"{p.bandwidth / 1e6:.1f}", f"{p.message_rate:,.0f}",
                         f"{100 * p.spread:.1f}%" if p.spread is not None else "—"])
        t = Table(["Size", "Pairs", "MB/s", "Messages/s", "Spread"], rows,
                  f"{_pairs(s.pairs)}, window {s.window}, median of {s.repeats} repeats; MB = 10^6 bytes", left=1)
        notes = ["All pairs together over the slowest rank's time (OSU's osu_mbw_mr scales rank 0's rate by the "
                 "pairs instead); spread: (max - min) / median of the repeats' message rates."]
        if any(p.stable is False for p in s.points):
            notes.append("Some sizes' repeats disagree by more than rmax's stability threshold: the machine was "
                         "not quiet, or the ranks share cores.")
        data = [{"size": p.size, "pairs": p.pairs, "window": p.window, "bandwidth_Bps": p.bandwidth,
                 "message_rate": p.message_rate, "spread": p.spread, "validated": p.validated} for p in s.points]
        return View([t], notes, {"mbw": data})

    def plots(self, runs):
        bw, rate = {}, {}
        for label, s in runs:
            good = [p for _, p in s.valid()]
            if good:
                name = f"{label} ({_pairs(s.pairs)})"
                sized = [p for p in good if p.size > 0]      # a log axis has no zero
                bw[name] = ([p.size for p in sized], [p.bandwidth / 1e6 for p in sized])
                rate[name] = ([p.size for p in sized], [p.message_rate / 1e6 for p in sized])
        if not bw:
            return []
        return [Plot("line", "Aggregate bandwidth vs message size", "bytes", "MB/s (median of repeats)", bw,
                     logx=True, logy=True),
                Plot("line", "Message rate vs message size", "bytes", "M messages/s (median of repeats)", rate,
                     logx=True)]
