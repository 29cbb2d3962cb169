"""ring: HPCC's naturally and randomly ordered ring latency and bandwidth, plus
each link of the natural ring timed alone (native/net/cmd_ring.c).

HPCC's statistics are best-of, as its definition demands: per ring, the
minimum over measurements of the maximum over ranks, the better of the two
methods; random rings are combined by the geometric mean. The medians are
kept beside them."""

from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass

from rmax.bench.netlaunch import (check_memory, check_message_sizes, header_summary, launch, ranks_on_this_host,
                                  require_ranks, split_records, with_program)
from rmax.bench.runner import Parsed
from rmax.launch import LaunchSpec
from rmax.native import executable
from rmax.store import Store
from rmax.store.runs import RunRecord

SCHEMA = "rmax.ring/1"
SLOW_LINK = 2.0   # a link slower than twice the median link is flagged


@dataclass
class RingOptions:
    lat_size: int = 8
    bw_size: int = 2_000_000
    random_rings: int = 10
    seed: int = 1
    budget: float = 0.02
    max_samples: int = 50
    links: bool = True

    @classmethod
    def quick(cls) -> "RingOptions":
        return cls(random_rings=3, budget=0.005, max_samples=20)


def argv(o: RingOptions) -> list[str]:
    a = [executable("rmax-net"), "ring", "--json", "-", "--lat-size", str(o.lat_size), "--bw-size", str(o.bw_size),
         "--random-rings", str(o.random_rings), "--seed", str(o.seed), "--budget", str(o.budget),
         "--max-samples", str(o.max_samples)]
    return a + ([] if o.links else ["--no-links"])


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


def parse(records: list[dict]) -> Parsed:
    header, _, done = split_records(records, SCHEMA)
    points = [r for r in records if r.get("schema") == SCHEMA and r.get("record") == "ring"]
    links = [r for r in records if r.get("schema") == SCHEMA and r.get("record") == "link"]
    lat_size = header["lat_size"] if header else 8
    bw_size = header["bw_size"] if header else 2_000_000
    lat, bw = _ring_values(points, lat_size), _ring_values(points, bw_size)
    summary: dict = {**header_summary(header), "lat_size": lat_size, "bw_size": bw_size,
                     "statistic": "HPCC: min over samples of the max over ranks, best method; "
                                  "random rings by geometric mean",
                     "units": {"latency": "s", "bandwidth": "bytes/s"}}
    if 0 in lat:
        summary["natural_latency"] = lat[0]["best"]
        summary["natural_latency_median"] = lat[0]["median"]
    if 0 in bw:
        summary["natural_bandwidth"] = bw_size / bw[0]["best"]
    summary["random_latency"] = geomean([v["best"] for k, v in lat.items() if k > 0])
    t_bw = geomean([v["best"] for k, v in bw.items() if k > 0])
    summary["random_bandwidth"] = bw_size / t_bw if t_bw else None
    summary["rings"] = [{"pattern": k, "ring": lat[k]["ring"], "latency": lat[k]["best"],
                         "bandwidth": bw_size / bw[k]["best"] if k in bw else None} for k in sorted(lat)]
    summary["links"] = []
    for size in sorted({link["size"] for link in links}):
        group = [link for link in links if link["size"] == size]
        med = statistics.median([g["time"] for g in group if g["time"]]) if group else None
        for g in group:
            summary["links"].append({"from": g["from"], "to": g["to"], "from_host": g.get("from_host"),
                                     "to_host": g.get("to_host"), "size": size, "time": g["time"], "best": g["best"],
                                     "n": g["n"], "validated": g["validated"],
                                     "slow": bool(med and g["time"] and g["time"] > SLOW_LINK * med)})
    samples = {f"{r['ordering']}{r['pattern']}/{r['size']}/{r['method']}": r.get("samples", []) for r in points}
    bad = [f"pattern {r['pattern']} size {r['size']}" for r in points if not r.get("validated")]
    bad += [f"link {g['from']}->{g['to']}" for g in links if not g.get("validated")]
    if bad:
        return Parsed(summary, samples, "invalid", f"ring messages failed validation: {', '.join(bad[:5])}")
    if done is None:
        return Parsed(summary, samples, "failed", "rmax-net ring stopped before its last measurement")
    return Parsed(summary, samples)


def run(spec: LaunchSpec | None = None, *, quick: bool = False, options: RingOptions | None = None,
        launcher: str | None = None, timeout: float = 600.0, store: Store | None = None,
        parent: str | None = None, on_point=None) -> RunRecord:
    """Ring latency and bandwidth over the ranks of spec (default: 2 on this host), stored as one run."""
    o = options or (RingOptions.quick() if quick else RingOptions())
    np_ = spec.np if spec else 2
    require_ranks(np_, "the ring test", minimum=2)
    check_message_sizes([o.lat_size, o.bw_size])
    check_memory(4 * max(o.lat_size, o.bw_size), ranks_on_this_host(spec) if spec else np_, "the ring buffers")
    full = with_program(spec, argv(o), 2, launcher)
    params = {**asdict(o), "np": full.np, "quick": quick, "launcher": launcher,
              "hosts": [h.name for h in full.hosts] if full.hosts else None}
    return launch("ring", full, params, parse, launcher=launcher, timeout=timeout, store=store, parent=parent,
                  on_stdout=on_point)
