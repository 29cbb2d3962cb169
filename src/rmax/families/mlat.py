"""mlat: latency of concurrent pairs, the method of OSU's osu_multi_lat (native/net/cmd_mlat.c):
rank i of the first half ping-pongs with rank i + n/2, every pair at once; a pair's latency is
its round trip halved, and a size's figure the average over the pairs (OSU's), with the slowest
pair beside it. Every message is marked and checked."""

from __future__ import annotations

from dataclasses import dataclass

from rmax.bench.family import Family, Summary, option, register
from rmax.bench.netlaunch import (MESSAGES, cell, check_memory, check_message_sizes, header_summary, require_ranks,
                                  split_records, parsed_records)
from rmax.bench.view import Figure, Plot, Table, View, figure
from rmax.errors import RmaxError
from rmax.native import executable
from rmax.params import Count, Seconds
from rmax.sizes import human_size

SCHEMA = "rmax.mlat/1"
STATISTIC = "median over samples of the one-way time averaged over the pairs"


@dataclass
class MlatOptions:
    sizes: tuple[int, ...] = option((0, 8, 1024, 65536), "Message sizes.", type=MESSAGES, quick=(0, 8))
    budget: float = option(0.02, "Seconds of timed repetitions per size.", type=Seconds(0.001, 3600, lo_open=False),
                           quick=0.005)
    max_samples: int = option(200, "Most samples per size.", type=Count(5, 100000), cli=False)
    min_samples: int = option(5, "Fewest samples per size.", type=Count(2, 100000), cli=False)
    validate: bool = option(False, "Check every byte of every message (slower; marks are always checked).",
                            flag="--validate")
    self_test_corrupt: bool = option(False, "The second rank of each pair damages what it sends: the run must come "
                                     "out invalid.", flag="--self-test-corrupt")


@dataclass
class MlatPoint:
    size: int
    pairs: int
    latency: float | None       # s one way, average over the pairs, median over samples
    slowest: float | None       # s one way, the slowest pair, median over samples
    n: int | None
    ci95: list[float] | None
    validated: bool


@dataclass
class MlatSummary(Summary):
    SCHEMA = SCHEMA
    points: list[MlatPoint]
    pairs: int
    hosts: list[str]
    mpi_library: str | None = None
    statistic: str = STATISTIC

    def valid(self) -> list[tuple[int, MlatPoint]]:
        return sorted(((i, p) for i, p in enumerate(self.points) if p.validated and p.latency),
                      key=lambda ip: ip[1].size)


def _point(r: dict) -> MlatPoint:
    s, hi = r.get("summary") or {}, r.get("rank_max") or {}
    return MlatPoint(r["size"], r["pairs"], s.get("median"), hi.get("median"), s.get("n"), s.get("ci95"),
                     bool(r.get("validated")))


def _pairs(n: int) -> str:
    return f"{n} pair{'s' if n != 1 else ''}"


@register
class Mlat(Family):
    """Latency of concurrent pairs (OSU osu_multi_lat's method): every pair ping-pongs at once.
    Needs an even number of ranks. On request: no survey step."""

    name = "mlat"
    title = "concurrent pairs: ping-pong latency (OSU multi_lat)"
    Options = MlatOptions
    Summary = MlatSummary
    scope = "net"
    native = ("rmax-net", "mlat")
    example = "rmax bench mlat --np 4 --sizes 0,8,1K"

    def check(self, o, ctx):
        np_ = self.ranks(ctx)
        require_ranks(np_, "mlat (ping-pong pairs)", minimum=2)
        if np_ % 2:
            raise RmaxError(f"mlat needs an even number of ranks (pairs), not {np_}",
                            hint=f"pass --np {np_ + 1} or --np {np_ - 1}" if np_ > 2 else "pass --np 2")
        check_message_sizes(o.sizes)
        check_memory(2 * max(o.sizes), ctx.spec.ranks_on_this_host() if ctx.spec else np_, "mlat's message buffers")

    def argv(self, o):
        a = [executable("rmax-net"), "mlat", "--json", "-", "--sizes", ",".join(map(str, sorted(set(o.sizes)))),
             "--budget", str(o.budget), "--max-samples", str(o.max_samples), "--min-samples", str(o.min_samples)]
        if o.validate:
            a.append("--validate")
        if o.self_test_corrupt:
            a.append("--self-test-corrupt")
        return a

    def timeout(self, o):
        return 120.0 + len(set(o.sizes)) * (3.0 * o.budget + 20 * max(o.sizes) / 1e8)

    def parse(self, records):
        header, recs, done = split_records(records, SCHEMA)
        pts = [_point(r) for r in recs]
        summary = MlatSummary(pts, (header or {}).get("pairs", 0), **header_summary(header))
        samples = {str(p.size): r.get("samples", []) for p, r in zip(pts, recs)}
        bad = [human_size(p.size) for p in pts if not p.validated]
        return parsed_records(summary, samples, bad, done, "payload validation failed at",
                       "rmax-net mlat stopped before its last point")

    def _latency(self, s: MlatSummary, i: int, p: MlatPoint) -> Figure | None:
        return figure(s, ("points", i, "latency"), f"latency.{p.pairs}.{p.size}",
                      f"Latency, {_pairs(p.pairs)} at once, {human_size(p.size)}", "us", STATISTIC, scale=1e6,
                      better="lower")

    def headline(self, s: MlatSummary) -> list[Figure]:
        good = s.valid()
        f = self._latency(s, *good[0]) if good else None
        return [f] if f else []

    def metrics(self, s: MlatSummary) -> list[Figure]:
        return [f for f in (self._latency(s, i, p) for i, p in s.valid()) if f]

    def view(self, s: MlatSummary) -> View:
        rows = [[human_size(p.size), str(p.pairs), cell(p.latency, 1e6, ".3f"), cell(p.slowest, 1e6, ".3f"),
                 "" if p.validated else "INVALID"] for p in sorted(s.points, key=lambda p: p.size)]
        t = Table(["Size", "Pairs", "Latency (us, average over pairs)", "Slowest pair (us)", "Note"], rows,
                  f"{_pairs(s.pairs)} on {', '.join(sorted(set(s.hosts)))}; {STATISTIC}", left=1)
        data = [{"size": p.size, "pairs": p.pairs, "latency_s": p.latency, "slowest_s": p.slowest,
                 "validated": p.validated} for p in s.points]
        return View([t], [], {"mlat": data})

    def plots(self, runs):
        series: dict[str, tuple[list, list]] = {}
        for label, s in runs:
            for _, p in s.valid():
                xs, ys = series.setdefault(f"{label} ({_pairs(s.pairs)})", ([], []))
                xs.append(max(p.size, 1))
                ys.append(p.latency * 1e6)
        if not series:
            return []
        return [Plot("line", "Concurrent pairs' latency vs message size", "bytes", "us (average over pairs)", series,
                     logx=True, logy=True)]
