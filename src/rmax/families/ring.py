"""ring: HPCC's naturally and randomly ordered ring latency and bandwidth, plus
each link of the natural ring timed alone (native/net/cmd_ring.c).

HPCC's statistics are best-of, as its definition demands: per ring, the
minimum over measurements of the maximum over ranks, the better of the two
methods; random rings are combined by the geometric mean. The medians are
kept beside them."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from rmax.bench.family import Family, Summary, SurveyPlan, option, register
from rmax.bench.netlaunch import (MAX_MESSAGE, cell, check_memory, check_message_sizes, cut_of, header_summary,
                                  require_ranks, split_records, swept, sweep_notes)
from rmax.bench.runner import Parsed
from rmax.bench.view import Figure, Table, View, figure
from rmax.native import executable
from rmax.params import Count, Seconds, Size

SLOW_LINK = 2.0   # a link slower than twice the median link is flagged
STATISTIC = "HPCC: min over samples of the max over ranks, best method; random rings by geometric mean"


@dataclass
class RingOptions:
    lat_size: int = option(8, "Latency message size (HPCC: 8).", type=Size(1, MAX_MESSAGE))
    bw_size: int = option(2_000_000, "Bandwidth message size (HPCC: 2,000,000).", type=Size(1, MAX_MESSAGE))
    random_rings: int = option(10, "Random rings.", type=Count(0, 10000), quick=3)
    seed: int = option(1, "Seed of the random rings.", type=Count(1, 10**18))
    budget: float = option(0.02, "Seconds per measurement.", type=Seconds(0.001, 3600, lo_open=False), quick=0.005)
    sweep_budget: float = option(0.0, "Seconds all measurements may take (0: no limit); past them the random rings "
                                      "and links not yet measured are left out and the run is partial (the natural "
                                      "ring always runs).", type=Seconds(0, 86400, lo_open=False))
    max_samples: int = option(50, "Most samples per measurement.", type=Count(5, 100000), quick=20, cli=False)
    min_samples: int = option(5, "Fewest samples per measurement (the survey's plan lowers it where ranks crowd "
                                 "few cores: below 5, no warm-up batch either).", type=Count(2, 100000), cli=False)
    links: bool = option(True, "Skip timing each link alone.", flag="--no-links")


@dataclass
class Ring:
    pattern: int                     # 0: the natural ring; 1...: random rings
    ring: list[int] | None           # the ranks in ring order
    latency: float                   # s, HPCC's best-of
    bandwidth: float | None          # bytes/s


@dataclass
class Link:
    """One hop of the natural ring, timed alone."""

    from_rank: int
    to_rank: int
    from_host: str | None
    to_host: str | None
    size: int
    time: float | None               # s per message, median
    best: float | None
    n: int | None
    validated: bool | None
    slow: bool                       # more than SLOW_LINK x the median link of its size


@dataclass
class RingSummary(Summary):
    SCHEMA = "rmax.ring/2"
    hosts: list[str]
    lat_size: int
    bw_size: int
    mpi_library: str | None = None
    natural_latency: float | None = None     # s
    natural_latency_median: float | None = None
    natural_bandwidth: float | None = None   # bytes/s
    random_latency: float | None = None
    random_bandwidth: float | None = None
    rings: list[Ring] = ()
    links: list[Link] = ()
    statistic: str = STATISTIC
    cut: str | None = None                   # what the sweep budget left out


def geomean(values: list[float]) -> float | None:
    v = [x for x in values if x and x > 0]
    return math.exp(sum(map(math.log, v)) / len(v)) if v else None


def _ring_values(points: list[dict], size: int) -> dict[int, dict]:
    """Per ring pattern at one size: best (HPCC) and median per-message time over both methods."""
    rings: dict[int, dict] = {}
    for r in points:
        if r["size"] != size or not r["summary"].get("n"):
            continue
        d = rings.setdefault(r["pattern"], {"best": math.inf, "median": math.inf, "ring": r.get("ring")})
        d["best"] = min(d["best"], r["summary"]["min"])
        d["median"] = min(d["median"], r["summary"]["median"])
    return rings


def _links(links: list[dict]) -> list[Link]:
    out = []
    for size in sorted({link["size"] for link in links}):
        group = [link for link in links if link["size"] == size]
        times = [g["time"] for g in group if g["time"]]
        med = statistics.median(times) if times else None
        out += [Link(g["from"], g["to"], g.get("from_host"), g.get("to_host"), size, g["time"], g["best"], g["n"],
                     g["validated"], bool(med and g["time"] and g["time"] > SLOW_LINK * med)) for g in group]
    return out


@register
class RingFamily(Family):
    """Naturally and randomly ordered ring latency and bandwidth (HPCC's definitions),
    and each link's time so that a slow hop stands out."""

    name = "ring"
    native = ("rmax-net", "ring")
    title = "natural and random ring latency and bandwidth"
    Options = RingOptions
    Summary = RingSummary
    scope = "net"
    default_np = None
    survey = SurveyPlan("ring latency and bandwidth", 0.03, 42, ranks="all")
    example = "rmax bench ring --hostfile hosts"

    def check(self, o, ctx):
        np_ = self.ranks(ctx)
        require_ranks(np_, "the ring test", minimum=2)
        check_message_sizes([o.lat_size, o.bw_size])
        check_memory(4 * max(o.lat_size, o.bw_size), ctx.spec.ranks_on_this_host() if ctx.spec else np_,
                     "the ring buffers")

    def argv(self, o):
        a = [executable("rmax-net"), "ring", "--json", "-", "--lat-size", str(o.lat_size), "--bw-size",
             str(o.bw_size), "--random-rings", str(o.random_rings), "--seed", str(o.seed), "--budget", str(o.budget),
             "--max-samples", str(o.max_samples), "--min-samples", str(o.min_samples),
             "--sweep-budget", str(o.sweep_budget)]
        return a + ([] if o.links else ["--no-links"])

    def parse(self, records):
        schema = "rmax.ring/1"
        header, _, done = split_records(records, schema)
        points = [r for r in records if r.get("schema") == schema and r.get("record") == "ring"]
        links = [r for r in records if r.get("schema") == schema and r.get("record") == "link"]
        cut = cut_of(records, schema)
        where = None if cut is None else (
            f"the random rings from pattern {cut['pattern']} on and what follows" if cut.get("pattern") else
            f"the {cut['from']}") + f" (after {cut['elapsed']:.1f} s)"
        lat_size = header["lat_size"] if header else 8
        bw_size = header["bw_size"] if header else 2_000_000
        lat, bw = _ring_values(points, lat_size), _ring_values(points, bw_size)
        t_bw = geomean([v["best"] for k, v in bw.items() if k > 0])
        summary = RingSummary(
            **header_summary(header), lat_size=lat_size, bw_size=bw_size,
            natural_latency=lat[0]["best"] if 0 in lat else None,
            natural_latency_median=lat[0]["median"] if 0 in lat else None,
            natural_bandwidth=bw_size / bw[0]["best"] if 0 in bw else None,
            random_latency=geomean([v["best"] for k, v in lat.items() if k > 0]),
            random_bandwidth=bw_size / t_bw if t_bw else None,
            rings=[Ring(k, lat[k]["ring"], lat[k]["best"], bw_size / bw[k]["best"] if k in bw else None)
                   for k in sorted(lat)],
            links=_links(links), cut=where)
        samples = {f"{r['ordering']}{r['pattern']}/{r['size']}/{r['method']}": r.get("samples", []) for r in points}
        bad = [f"pattern {r['pattern']} size {r['size']}" for r in points if not r.get("validated")]
        bad += [f"link {g['from']}->{g['to']}" for g in links if not g.get("validated")]
        if bad:
            return Parsed(summary, samples, "invalid", f"ring messages failed validation: {', '.join(bad[:5])}")
        if done is None:
            return Parsed(summary, samples, "failed", "rmax-net ring stopped before its last measurement")
        return swept(Parsed(summary, samples), cut, where)

    def metrics(self, s: RingSummary) -> list[Figure]:
        out = [figure(s, (f"{which}_latency",), f"{which}.latency", f"{which} ring latency, {s.lat_size} B", "us",
                      STATISTIC, scale=1e6, better="lower", at=f"{s.lat_size} B") for which in ("natural", "random")]
        out += [figure(s, (f"{which}_bandwidth",), f"{which}.bandwidth", f"{which} ring bandwidth, {s.bw_size} B",
                       "MB/s", STATISTIC, scale=1e-6, at=f"{s.bw_size} B") for which in ("natural", "random")]
        return [f for f in out if f]

    def view(self, s: RingSummary) -> View:
        tables = [Table(["Ring", "Latency (us)", "Bandwidth (MB/s)"],
                        [["naturally ordered", cell(s.natural_latency, 1e6, ".3f"),
                          cell(s.natural_bandwidth, 1e-6, ".0f")],
                         ["randomly ordered", cell(s.random_latency, 1e6, ".3f"),
                          cell(s.random_bandwidth, 1e-6, ".0f")]],
                        f"{len(s.hosts)} ranks; HPCC's definitions ({s.lat_size} B latency, {s.bw_size} B bandwidth), "
                        "best of samples")]
        notes = sweep_notes(s.cut)
        if s.links:
            rows = [[str(k.from_rank), str(k.to_rank), str(k.size), cell(k.time, 1e6, ".3f"),
                     cell(k.time and k.size / k.time, 1e-6, ".0f"),
                     " ".join(x for x in ("SLOW" if k.slow else "", "" if k.validated else "INVALID") if x)]
                    for k in s.links]
            tables.append(Table(["From", "To", "Size (bytes)", "Avg latency (us)", "Bandwidth (MB/s)", "Note"], rows,
                                "links of the natural ring, each alone", left=2))
            notes += [f"slow hop: rank {k.from_rank} ({k.from_host}) -> {k.to_rank} ({k.to_host}), {k.size} B in "
                      f"{cell(k.time, 1e6)} us (median) against {cell(k.best, 1e6)} us best" for k in s.links if k.slow]
        data = [{"from": k.from_rank, "to": k.to_rank, "from_host": k.from_host, "to_host": k.to_host, "size": k.size,
                 "time_s": k.time, "best_s": k.best, "n": k.n, "slow": k.slow, "validated": k.validated}
                for k in s.links]
        return View(tables, notes, {"ring_links": data})
