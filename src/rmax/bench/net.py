"""net: point-to-point latency and bandwidth between two ranks, per layer
(native/net/cmd_p2p.c): MPI blocking, non-blocking, stream and bidirectional,
and the same round trip over TCP and UDP sockets between the same processes.

The parser adds what the kernel leaves to Python: a Hockney fit per layer
and the anomalies of each bandwidth curve."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from rmax.bench.netlaunch import (check_memory, check_message_sizes, header_summary, launch, ranks_on_this_host,
                                  require_ranks, split_records, with_program)
from rmax.bench.runner import Parsed
from rmax.launch import LaunchSpec
from rmax.model.hockney import fit_hockney
from rmax.native import executable
from rmax.store import Store
from rmax.store.runs import RunRecord

SCHEMA = "rmax.net/1"
LAYERS = ("mpi", "mpi-nonblocking", "mpi-stream", "mpi-bidir", "tcp", "udp")
PINGPONG = ("mpi", "mpi-nonblocking", "tcp", "udp")   # layers whose time per message is a one-way latency
ANOMALY_DROP = 0.10   # a point more than 10% below both neighbours


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
         "--window", str(o.window), "--budget", str(o.budget), "--max-samples", str(o.max_samples)]
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
    return a


def anomalies(sizes, bandwidths, drop: float = ANOMALY_DROP) -> list[dict]:
    """Sizes whose bandwidth is more than `drop` below both neighbours on the curve
    (NetPIPE's dips: seed 05's 31 KB TCP hole, seed 03's packet-size steps)."""
    pts = sorted((s, b) for s, b in zip(sizes, bandwidths) if b is not None and b > 0)
    found = []
    for (s0, b0), (s, b), (s1, b1) in zip(pts, pts[1:], pts[2:]):
        if b < (1 - drop) * b0 and b < (1 - drop) * b1:
            found.append({"size": s, "bandwidth": b, "left": b0, "right": b1,
                          "drop": 1 - b / min(b0, b1)})
    return found


def _point(rec: dict) -> dict:
    s = rec["summary"]
    med = s.get("median")
    size = rec["size"]
    best = s.get("min")
    return {"size": size, "latency": med, "latency_mean": s.get("mean"), "latency_min": best,
            "bandwidth": size / med if med else None, "bandwidth_best": size / best if best else None, "n": s.get("n"), "ci95": s.get("ci95"),
            "iters": rec.get("iters"), "converged": rec.get("converged"), "validated": rec.get("validated"),
            "udp_resent": rec.get("udp_resent", 0)}


def _at(points: list[dict], size: int) -> dict | None:
    return next((p for p in points if p["size"] == size), None)


def parse(records: list[dict]) -> Parsed:
    header, points, done = split_records(records, SCHEMA)
    layers: dict[str, dict] = {}
    samples: dict[str, list] = {}
    for r in points:
        layer = layers.setdefault(r["layer"], {"points": []})
        layer["points"].append(_point(r))
        samples[f"{r['layer']}/{r['size']}"] = r.get("samples", [])
    for name, layer in layers.items():
        pts = layer["points"]
        good = [p for p in pts if p["latency"] and p["validated"]]
        try:
            layer["hockney"] = fit_hockney([p["size"] for p in good], [p["latency"] for p in good]).as_dict()
        except ValueError as e:
            layer["hockney"] = {"error": str(e)}
        # Interference from other work only ever slows a point down, so the dips are looked
        # for in the best-sample curve: a dip there is structure (a protocol switching over,
        # seed 05's TCP hole), not a preemption.
        layer["anomalies"] = anomalies([p["size"] for p in good], [p["bandwidth_best"] for p in good])
        layer["kind"] = "latency" if name in PINGPONG else "throughput"
    summary: dict = {**header_summary(header),
                     "addresses": [header.get("address0"), header.get("address1")] if header else [],
                     "window": header.get("window") if header else None,
                     "batch": header.get("batch") if header else None,
                     "one_buffer": header.get("one_buffer") if header else None, "layers": layers,
                     "statistic": "median of batch averages; latency = one-way time per message",
                     "units": {"latency": "s", "bandwidth": "bytes/s", "size": "bytes"}}
    mpi = layers.get("mpi", {}).get("points", [])
    head = {}
    if (p := _at(mpi, 1)) is not None:
        head["latency_1B"] = p["latency"]
    if (p := _at(mpi, 1 << 20)) is not None:
        head["bandwidth_1MiB"] = p["bandwidth"]
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
