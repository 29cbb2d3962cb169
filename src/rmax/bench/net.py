"""net: point-to-point latency and bandwidth between two ranks, per layer
(native/net/cmd_p2p.c): MPI blocking, non-blocking, stream and bidirectional,
and the same round trip over TCP and UDP sockets between the same processes.

The parser adds what the kernel leaves to Python: a Hockney fit per layer
and the anomalies of each bandwidth curve."""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass

from rmax.bench.netlaunch import (check_memory, check_message_sizes, header_summary, launch, ranks_on_this_host,
                                  require_ranks, split_records, with_program)
from rmax.bench.runner import Parsed
from rmax.launch import LaunchSpec
from rmax.model.hockney import fit_hockney
from rmax.native import executable
from rmax.store import Store
from rmax.stats import differ_significantly, spread
from rmax.store.runs import RunRecord

SCHEMA = "rmax.net/1"
LAYERS = ("mpi", "mpi-nonblocking", "mpi-stream", "mpi-bidir", "tcp", "udp")
PINGPONG = ("mpi", "mpi-nonblocking", "tcp", "udp")   # layers whose time per message is a one-way latency
ANOMALY_DROP = 0.10   # a point more than 10% below both neighbours
REPEATS = 3           # whole-schedule repeats: the fewest that give a spread and a t-test on each side


@dataclass
class NetOptions:
    layers: tuple[str, ...] = LAYERS
    sizes: tuple[int, ...] | None = None     # explicit sizes instead of the schedule
    max_size: int = 8 << 20
    perturb: bool = True                     # NetPIPE's +-3-byte points
    window: int = 64
    budget: float = 0.05                     # seconds per (layer, size)
    max_samples: int = 200
    validate: bool = False                   # check every byte of every message
    batch: float | None = None               # seconds per timed batch (default 1 ms; NetPIPE's trials: 0.25)
    one_buffer: bool = False                 # ping-pongs echo the received buffer, as NetPIPE does
    repeats: int = REPEATS                   # the whole schedule this many times, one after the other
    offset: int = 0                          # buffers start this many bytes past a page boundary

    @classmethod
    def quick(cls) -> "NetOptions":
        """2^k and 3*2^(k-1) without the +-3-byte points, a short budget: every curve in seconds."""
        return cls(perturb=False, budget=0.01, max_samples=50)


def argv(o: NetOptions) -> list[str]:
    bad = [layer for layer in o.layers if layer not in LAYERS]
    if bad:
        from rmax.errors import RmaxError

        raise RmaxError(f"unknown layer '{bad[0]}'", hint=f"one of: {', '.join(LAYERS)}")
    a = [executable("rmax-net"), "p2p", "--json", "-", "--layers", ",".join(o.layers),
         "--window", str(o.window), "--budget", str(o.budget), "--max-samples", str(o.max_samples),
         "--repeats", str(o.repeats)]
    if o.sizes:
        a += ["--sizes", ",".join(str(s) for s in o.sizes)]
    else:
        a += ["--max-size", str(o.max_size)]
        if not o.perturb:
            a.append("--no-perturb")
    if o.validate:
        a.append("--validate")
    if o.batch:
        a += ["--batch", str(o.batch)]
    if o.one_buffer:
        a.append("--one-buffer")
    if o.offset:
        a += ["--offset", str(o.offset)]
    return a


def anomalies(sizes, repeats, drop: float = ANOMALY_DROP, alpha: float = 0.05) -> list[dict]:
    """Sizes whose bandwidth is more than `drop` below both neighbours on the curve
    (NetPIPE's dips: a protocol switching over, a TCP window hole) *and* significantly
    so: Welch's t-test of the point's repeats against each neighbour's repeats
    (stats.differ_significantly). `repeats` holds one list of bandwidths per size, one
    value per repeat; with fewer than two repeats nothing is significant, so nothing is
    flagged: one timed run cannot tell a dip from a preemption."""
    pts = sorted((s, [v for v in (r or []) if v and v > 0]) for s, r in zip(sizes, repeats))
    pts = [(s, r, statistics.median(r)) for s, r in pts if r]
    found = []
    for (s0, r0, b0), (s, r, b), (s1, r1, b1) in zip(pts, pts[1:], pts[2:]):
        if not (b < (1 - drop) * b0 and b < (1 - drop) * b1):
            continue
        (sig0, p0), (sig1, p1) = differ_significantly(r, r0, alpha), differ_significantly(r, r1, alpha)
        if sig0 and sig1:
            found.append({"size": s, "bandwidth": b, "left": b0, "right": b1, "drop": 1 - b / min(b0, b1),
                          "p_left": p0, "p_right": p1, "repeats": len(r)})
    return found


def _point(size: int, recs: list[dict]) -> dict:
    """One (layer, size) point from its repeats: per repeat the median time per message
    over that repeat's batches; the point's figure is the median over repeats, with the
    spread across repeats (stats.spread) beside it."""
    recs = sorted(recs, key=lambda r: r.get("trial", 0))
    per = [r["summary"].get("median") for r in recs]
    best = min((r["summary"]["min"] for r in recs if r["summary"].get("min")), default=None)
    means = [r["summary"].get("mean") for r in recs]
    sp = spread(per)
    med = sp["median"]
    return {"size": size, "latency": med, "latency_min": best,
            "latency_mean": statistics.fmean(means) if all(means) else None,
            "bandwidth": size / med if med else None, "bandwidth_best": size / best if best else None,
            "repeats": per, "bandwidth_repeats": [size / v if v else None for v in per],
            "spread": sp["spread"], "stable": sp["stable"], "iqr": sp.get("iqr"), "ci95": sp.get("ci95"),
            "n": sum(r["summary"].get("n") or 0 for r in recs), "iters": recs[-1].get("iters"),
            "converged": all(r.get("converged") for r in recs), "validated": all(r.get("validated") for r in recs),
            "udp_resent": sum(r.get("udp_resent", 0) for r in recs)}


def _at(points: list[dict], size: int) -> dict | None:
    return next((p for p in points if p["size"] == size), None)


def _headline(p: dict, key: str, value) -> dict:
    return {key: value, f"{key}_spread": p["spread"], f"{key}_stable": p["stable"], f"{key}_repeats": len(p["repeats"])}


def parse(records: list[dict]) -> Parsed:
    header, points, done = split_records(records, SCHEMA)
    grouped: dict[tuple[str, int], list[dict]] = {}
    for r in points:
        grouped.setdefault((r["layer"], r["size"]), []).append(r)
    layers: dict[str, dict] = {}
    samples: dict[str, dict] = {}
    for (name, size), recs in grouped.items():
        layers.setdefault(name, {"points": []})["points"].append(_point(size, recs))
        # repeat-to-repeat values (the samples a significance test may use) and each
        # repeat's batches (blocks of one timed run: not independent of each other)
        samples[f"{name}/{size}"] = {"repeats": [r["summary"].get("median") for r in recs],
                                     "batches": [r.get("samples", []) for r in recs]}
    repeats = header.get("repeats", 1) if header else 1
    for name, layer in layers.items():
        pts = layer["points"]
        good = [p for p in pts if p["latency"] and p["validated"]]
        try:
            layer["hockney"] = fit_hockney([p["size"] for p in good], [p["latency"] for p in good]).as_dict()
        except ValueError as e:
            layer["hockney"] = {"error": str(e)}
        layer["anomalies"] = anomalies([p["size"] for p in good], [p["bandwidth_repeats"] for p in good])
        layer["dips_tested"] = repeats >= 2
        layer["unstable"] = [p["size"] for p in pts if p["stable"] is False]
        layer["kind"] = "latency" if name in PINGPONG else "throughput"
    summary: dict = {**header_summary(header),
                     "addresses": [header.get("address0"), header.get("address1")] if header else [],
                     "window": header.get("window") if header else None,
                     "batch": header.get("batch") if header else None, "repeats": repeats,
                     "one_buffer": header.get("one_buffer") if header else None,
                     "offset": header.get("offset", 0) if header else None, "layers": layers,
                     "statistic": "median over repeats of each repeat's median batch average; "
                                  "latency = one-way time per message; spread = (max - min) / median over repeats",
                     "units": {"latency": "s", "bandwidth": "bytes/s", "size": "bytes"}}
    mpi = layers.get("mpi", {}).get("points", [])
    head = {}
    if (p := _at(mpi, 1)) is not None:
        head.update(_headline(p, "latency_1B", p["latency"]))
    if (p := _at(mpi, 1 << 20)) is not None:
        head.update(_headline(p, "bandwidth_1MiB", p["bandwidth"]))
    tcp = layers.get("tcp", {}).get("points", [])
    if _at(mpi, 1) and _at(tcp, 1) and _at(mpi, 1)["latency"]:
        head["tcp_over_mpi_latency_1B"] = _at(tcp, 1)["latency"] / _at(mpi, 1)["latency"]
    summary["headline"] = head
    invalid = [f"{r['layer']}/{r['size']}" for r in points if not r.get("validated")]
    if invalid:
        return Parsed(summary, samples, "invalid", f"payload validation failed at {', '.join(invalid[:5])}")
    if done is None:
        return Parsed(summary, samples, "failed", "rmax-net p2p stopped before its last point")
    return Parsed(summary, samples)


def run(spec: LaunchSpec | None = None, *, quick: bool = False, options: NetOptions | None = None,
        launcher: str | None = None, timeout: float = 600.0, store: Store | None = None,
        parent: str | None = None, on_point=None, label: str | None = None) -> RunRecord:
    """Measure the two ranks of spec (default: two ranks on this host) and store the run.

    This is the entry point `rmax bench net` and a survey call."""
    o = options or (NetOptions.quick() if quick else NetOptions())
    np_ = spec.np if spec else 2
    require_ranks(np_, "the net (point-to-point) test", exactly=2)
    largest = max(o.sizes) if o.sizes else o.max_size
    check_message_sizes([largest])
    check_memory(2 * largest, ranks_on_this_host(spec) if spec else 2, "the send and receive buffers")
    full = with_program(spec, argv(o), 2, launcher)
    params = {**asdict(o), "np": full.np, "quick": quick, "launcher": launcher,
              "hosts": [h.name for h in full.hosts] if full.hosts else None}
    return launch("net", full, params, parse, launcher=launcher, timeout=timeout, store=store, parent=parent,
                  on_stdout=on_point, label=label)
