"""net: point-to-point latency and bandwidth between two ranks, per layer
(native/net/cmd_p2p.c): MPI blocking, non-blocking, stream and bidirectional,
and the same round trip over TCP and UDP sockets between the same processes.

The parser adds what the kernel leaves to Python: a Hockney fit per layer
and the anomalies of each bandwidth curve."""

from __future__ import annotations

import dataclasses

import statistics
from dataclasses import dataclass

from rmax.bench.family import Family, Summary, SurveyPlan, option, register
from rmax.bench.netlaunch import (MESSAGE, MESSAGES, cell, check_memory, check_message_sizes, check_names,
                                  header_summary, require_ranks, split_records)
from rmax.bench.runner import Parsed
from rmax.bench.view import Figure, Plot, Table, View, figure
from rmax.native import executable
from rmax.params import Count, Names, Seconds, Size
from rmax.stats import differ_significantly, spread, two_states

LAYERS = ("mpi", "mpi-nonblocking", "mpi-stream", "mpi-bidir", "tcp", "udp")
PINGPONG = ("mpi", "mpi-nonblocking", "tcp", "udp")   # layers whose time per message is a one-way latency
ANOMALY_DROP = 0.10   # a point more than 10% below both neighbours
REPEATS = 3           # whole-schedule repeats: the fewest that give a spread and a t-test on each side
# Seconds a layer may take per repeat. Unloaded, a quick layer takes a few seconds and a full one
# under a minute; on a loaded machine busy-polling ranks get a fraction of a core each and a window
# of large messages both ways (mpi-bidir) can take minutes: the budget bounds --quick at about
# layers x repeats x 15 s (4.5 min for all six) and keeps the layers that finished.
LAYER_BUDGET, QUICK_LAYER_BUDGET = 120.0, 15.0
STATISTIC = "median over repeats of each repeat's median batch average"


@dataclass
class NetOptions:
    layers: tuple[str, ...] = option(LAYERS, "Comma-separated layers.", type=Names())
    sizes: tuple[int, ...] | None = option(None, "Explicit sizes instead of NetPIPE's schedule.", type=MESSAGES)
    max_size: int = option(8 << 20, "Largest size of the schedule.", type=MESSAGE, show="8MiB")
    perturb: bool = option(True, "Leave out the +-3-byte points of the schedule (NetPIPE's perturbations).",
                           flag="--no-perturb", quick=False)
    window: int = option(64, "Messages in flight for stream and bidirectional.", type=Count(1, 1024))
    budget: float = option(0.05, "Seconds of timed repetitions per layer and size.",
                           type=Seconds(0.001, 3600, lo_open=False), quick=0.01)
    max_samples: int = option(200, "Most samples per point.", type=Count(5, 100000), quick=50)
    min_samples: int = option(5, "Fewest samples per point (the survey's plan lowers it where ranks crowd few cores: "
                                 "below 5, no warm-up batch either).", type=Count(2, 100000), cli=False)
    window_bytes: int = option(8 << 20, "Bytes in flight at most in stream and bidirectional (0: no bound): a large "
                               "message gets a shorter window (OSU's 64 x 2 MiB is a second per batch at 1 Gbit/s).",
                               type=Size(0, 1 << 40), show="8MiB")
    batch: float | None = option(None, "Seconds one timed batch (one sample) lasts [default: 0.001; NetPIPE's "
                                       "trials: 0.25].", type=Seconds(1e-5, 10, lo_open=False))
    one_buffer: bool = option(False, "Ping-pongs send back the buffer just received, as NetPIPE does (OSU uses two "
                                     "buffers).", flag="--one-buffer")
    offset: int = option(0, "Bytes past a page boundary where the buffers start (NetPIPE's large malloc'ed buffer: "
                            "16).", type=Count(0, 4095))
    validate: bool = option(False, "Check every byte of every message (slower).", flag="--validate")
    repeats: int = option(REPEATS, "Times the whole schedule is measured: each point's spread across repeats, and "
                                   "the dips' t-test.", type=Count(1, 1000))
    layer_budget: float = option(LAYER_BUDGET, "Seconds a layer may take in one repeat (0: no limit); past it its "
                                               "other sizes are left out and the run is partial.",
                                 type=Seconds(0, 86400, lo_open=False), quick=QUICK_LAYER_BUDGET)


@dataclass
class Point:
    """One (layer, size): per repeat the median time per message over that repeat's batches;
    the point's figures are the median over repeats, with the spread across repeats beside them."""

    size: int
    latency: float | None            # s per message (one-way for the ping-pong layers)
    latency_min: float | None        # the fastest batch of any repeat
    latency_mean: float | None
    bandwidth: float | None          # bytes/s, size / latency
    bandwidth_best: float | None
    repeats: list[float | None]      # each repeat's median time per message
    bandwidth_repeats: list[float | None]
    spread: float | None             # (max - min) / median over repeats
    stable: bool | None              # None: one repeat, nothing to say
    iqr: list[float] | None
    ci95: list[float] | None
    n: int
    iters: int | None
    converged: bool
    validated: bool
    udp_resent: int = 0


@dataclass
class Fit:
    """Hockney's t(n) = alpha + n / beta over a layer's validated points (rmax.model.hockney)."""

    alpha: float                     # s
    beta: float                      # bytes/s
    n_half: float                    # bytes
    alpha_err: float
    beta_err: float
    n_half_err: float
    points: int
    rms_rel_residual: float
    alpha_ci95: list[float]
    beta_ci95: list[float]
    warnings: list[str]
    quality: str                     # good | poor


@dataclass
class Dip:
    """A size whose bandwidth is significantly below both neighbours (NetPIPE's dips)."""

    size: int
    bandwidth: float
    left: float
    right: float
    drop: float
    p_left: float
    p_right: float
    repeats: int


@dataclass
class Layer:
    name: str
    kind: str                        # latency (a ping-pong: one-way time) | throughput (time per message)
    points: list[Point]
    fit: Fit | None = None
    fit_error: str | None = None     # why no fit (fewer than three sizes, no growth)
    anomalies: list[Dip] = ()
    dips_tested: bool = False        # two repeats or more: a dip can be told from a preemption
    unstable: list[int] = ()         # sizes whose repeats differ by more than stats.STABLE_SPREAD

    def at(self, size: int) -> tuple[int, Point] | None:
        return next(((i, p) for i, p in enumerate(self.points) if p.size == size), None)


@dataclass
class NetSummary(Summary):
    SCHEMA = "rmax.net/3"
    READS = ("rmax.net/2",)          # /3 added `cut`
    layers: list[Layer]
    hosts: list[str]
    mpi_library: str | None = None
    addresses: list[str | None] = ()
    window: int | None = None
    batch: float | None = None
    repeats: int = 1
    one_buffer: bool | None = None
    offset: int | None = None
    cut: list[str] = ()              # layers whose time budget ran out: "LAYER from SIZE B in repeat R"
    statistic: str = (f"{STATISTIC}; latency = one-way time per message; "
                      "spread = (max - min) / median over repeats")

    def layer(self, name: str) -> tuple[int, Layer] | None:
        return next(((i, x) for i, x in enumerate(self.layers) if x.name == name), None)

    def point(self, layer: str, size: int) -> tuple[int, int, Point] | None:
        """(layer index, point index, point) of `layer` at `size`."""
        found = self.layer(layer)
        at = found[1].at(size) if found else None
        return (found[0], *at) if at else None


def anomalies(sizes, repeats, drop: float = ANOMALY_DROP, alpha: float = 0.05) -> list[Dip]:
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
            found.append(Dip(s, b, b0, b1, 1 - b / min(b0, b1), p0, p1, len(r)))
    return found


def _point(size: int, recs: list[dict]) -> Point:
    recs = sorted(recs, key=lambda r: r.get("trial", 0))
    per = [r["summary"].get("median") for r in recs]
    best = min((r["summary"]["min"] for r in recs if r["summary"].get("min")), default=None)
    means = [r["summary"].get("mean") for r in recs]
    sp = spread(per)
    med = sp["median"]
    return Point(size, med, best, statistics.fmean(means) if all(means) else None, size / med if med else None,
                 size / best if best else None, per, [size / v if v else None for v in per], sp["spread"],
                 sp["stable"], sp.get("iqr"), sp.get("ci95"), sum(r["summary"].get("n") or 0 for r in recs),
                 recs[-1].get("iters"), all(r.get("converged") for r in recs),
                 all(r.get("validated") for r in recs), sum(r.get("udp_resent", 0) for r in recs))


def _layer(name: str, pts: list[Point], repeats: int) -> Layer:
    from rmax.model.hockney import fit_hockney   # numpy: on first use, so that --help and refusals start fast

    good = [p for p in pts if p.latency and p.validated]
    layer = Layer(name, "latency" if name in PINGPONG else "throughput", pts,
                  anomalies=anomalies([p.size for p in good], [p.bandwidth_repeats for p in good]),
                  dips_tested=repeats >= 2, unstable=[p.size for p in pts if p.stable is False])
    try:
        d = fit_hockney([p.size for p in good], [p.latency for p in good]).as_dict()
        layer.fit = Fit(**d)
    except ValueError as e:
        layer.fit_error = str(e)
    return layer


def _states(p: Point, bandwidth: bool = False) -> str:
    """The two states the point's repeats fall into (stats.two_states), in the figure's unit, or ""."""
    found = two_states(p.repeats)
    if not found:
        return ""
    (fast, nf), (slow, ns) = found
    if bandwidth:
        return f"two states: {p.size / slow * 1e-6:.0f} MB/s ({ns} repeats) and {p.size / fast * 1e-6:.0f} MB/s ({nf})"
    return f"two states: {fast * 1e6:.3g} us ({nf} repeats) and {slow * 1e6:.3g} us ({ns})"


def _over(p: Point, bandwidth: bool = False) -> str:
    if p.stable is None:
        return ""
    states = _states(p, bandwidth)
    return f" of {len(p.repeats)} repeats, spread {p.spread * 100:.0f}%" + (
        "" if p.stable else f" (unstable{': ' + states if states else ''})")


@register
class Net(Family):
    """Ping-pong latency and bandwidth vs message size between two ranks, over MPI
    (blocking, non-blocking, stream, bidirectional) and over TCP and UDP sockets."""

    name = "net"
    native = ("rmax-net", "p2p")
    title = "point-to-point latency and bandwidth per layer (MPI, TCP, UDP)"
    Options = NetOptions
    Summary = NetSummary
    scope = "net"
    default_np = 2
    survey = SurveyPlan("point-to-point latency and bandwidth", 0.08, 40, ranks="pair")
    example = "rmax bench net --hosts node1:1,node2:1"

    def between_ranks_options(self, o):
        # a one-node survey's step: the blocking MPI ping-pong, whose Hockney fit `rmax model hpl` reads
        return dataclasses.replace(o, layers=("mpi",))

    def check(self, o, ctx):
        require_ranks(self.ranks(ctx), "the net (point-to-point) test", exactly=2)
        check_names(o.layers, LAYERS, "layer")
        largest = max(o.sizes) if o.sizes else o.max_size
        check_message_sizes([largest])
        check_memory(2 * largest, ctx.spec.ranks_on_this_host() if ctx.spec else 2, "the send and receive buffers")

    def argv(self, o):
        a = [executable("rmax-net"), "p2p", "--json", "-", "--layers", ",".join(o.layers),
             "--window", str(o.window), "--budget", str(o.budget), "--max-samples", str(o.max_samples),
             "--min-samples", str(o.min_samples), "--window-bytes", str(o.window_bytes), "--repeats", str(o.repeats),
             "--layer-budget", str(o.layer_budget)]
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

    def parse(self, records):
        header, points, done = split_records(records, "rmax.net/1")
        grouped: dict[tuple[str, int], list[dict]] = {}
        for r in points:
            grouped.setdefault((r["layer"], r["size"]), []).append(r)
        by_layer: dict[str, list[Point]] = {}
        samples: dict[str, dict] = {}
        for (name, size), recs in grouped.items():
            by_layer.setdefault(name, []).append(_point(size, recs))
            # repeat-to-repeat values (the samples a significance test may use) and each
            # repeat's batches (blocks of one timed run: not independent of each other)
            samples[f"{name}/{size}"] = {"repeats": [r["summary"].get("median") for r in recs],
                                         "batches": [r.get("samples", []) for r in recs]}
        h = header or {}
        repeats = h.get("repeats", 1)
        cut = [f"{r['layer']} from {r['from_size']} B in repeat {r['trial'] + 1}"
               for r in records if r.get("schema") == "rmax.net/1" and r.get("record") == "cut"]
        summary = NetSummary([_layer(n, pts, repeats) for n, pts in by_layer.items()], **header_summary(header),
                             addresses=[h.get("address0"), h.get("address1")] if header else [],
                             window=h.get("window"), batch=h.get("batch"), repeats=repeats,
                             one_buffer=h.get("one_buffer"), offset=h.get("offset", 0) if header else None, cut=cut)
        invalid = [f"{r['layer']}/{r['size']}" for r in points if not r.get("validated")]
        if invalid:
            return Parsed(summary, samples, "invalid", f"payload validation failed at {', '.join(invalid[:5])}")
        if done is None:
            return Parsed(summary, samples, "failed", "rmax-net p2p stopped before its last point")
        if cut:
            return Parsed(summary, samples, "partial", f"layer time budget ({h.get('layer_budget', 0):g} s) used up: "
                                                       f"left out {'; '.join(cut)}")
        return Parsed(summary, samples)

    def _latency(self, s: NetSummary, layer: str, role: str | None = None) -> Figure | None:
        found = s.point(layer, 1)
        if not found:
            return None
        i, j, p = found
        return figure(s, ("layers", i, "points", j, "latency"), f"{layer}.latency_1B",
                      f"{'MPI' if layer == 'mpi' else layer} latency, 1 B", "us", "median one-way" + _over(p),
                      scale=1e6, better="lower", role=role, repeats=("layers", i, "points", j, "repeats"))

    def _bandwidth(self, s: NetSummary, layer: str, role: str | None = None) -> Figure | None:
        found = s.point(layer, 1 << 20)
        if not found:
            return None
        i, j, p = found
        return figure(s, ("layers", i, "points", j, "bandwidth"), f"{layer}.bandwidth_1MiB",
                      f"{'MPI' if layer == 'mpi' else layer} bandwidth, 1 MiB", "MB/s",
                      "median" + _over(p, bandwidth=True),
                      scale=1e-6, role=role, repeats=("layers", i, "points", j, "bandwidth_repeats"))

    def headline(self, s: NetSummary) -> list[Figure]:
        return [f for f in (self._latency(s, "mpi", "mpi_latency"), self._bandwidth(s, "mpi", "mpi_bandwidth")) if f]

    def metrics(self, s: NetSummary) -> list[Figure]:
        out = self.headline(s)
        for layer in s.layers:
            if layer.name != "mpi":
                out += [self._latency(s, layer.name), self._bandwidth(s, layer.name)]
        return [f for f in out if f]

    def view(self, s: NetSummary) -> View:
        rows, notes, fit_rows, data = [], [], [], []
        notes.append(f"hosts {', '.join(s.hosts)}; {s.mpi_library or 'MPI library unknown'}; "
                     f"{s.repeats} repeat(s) of the schedule")
        for layer in s.layers:
            dips = {a.size for a in layer.anomalies}
            rows += [[layer.name, str(p.size), cell(p.latency_mean, 1e6), cell(p.latency, 1e6),
                      cell(p.bandwidth, 1e-6),
                      "—" if p.stable is None else f"{p.spread * 100:.0f}%" + ("" if p.stable else " UNSTABLE"),
                      " ".join(x for x in ("dip" if p.size in dips else "", "" if p.validated else "INVALID") if x)]
                     for p in layer.points]
            f = layer.fit
            dip_text = ((", ".join(str(a.size) for a in layer.anomalies[:8]) or "none") if layer.dips_tested
                        else "not tested (1 repeat)")
            if f:
                fit_rows.append([layer.name, f"{cell(f.alpha, 1e6, '.3f')} [{cell(f.alpha_ci95[0], 1e6, '.3f')}, "
                                             f"{cell(f.alpha_ci95[1], 1e6, '.3f')}]",
                                 f"{cell(f.beta, 1e-6, '.0f')} [{cell(f.beta_ci95[0], 1e-6, '.0f')}, "
                                 f"{cell(f.beta_ci95[1], 1e-6, '.0f')}]",
                                 f"{f.n_half:.0f}", f"{f.rms_rel_residual:.2f} ({f.quality})", dip_text])
                notes += [f"{layer.name}: warning: {w}" for w in f.warnings]
            else:
                fit_rows.append([layer.name, "—", "—", "—", f"no fit: {layer.fit_error}", dip_text])
            if layer.unstable:
                notes.append(f"{layer.name}: {len(layer.unstable)} of {len(layer.points)} points UNSTABLE (repeats "
                             "differ by more than 10%): a single run of these sizes cannot be trusted")
            split = [(p, _states(p, layer.kind == "throughput")) for p in layer.points if p.stable is False]
            notes += [f"{layer.name} {p.size} B: the repeats fall into {states}; the median mixes them. The pair "
                      "changed state during the run: other work on its CPUs, or on a virtual machine the host moving "
                      "the vCPUs between cores that share a cache and cores that do not (`rmax bench oslat --tests "
                      "cacheline` shows which: tens of ns when they share one)" for p, states in split if states]
            data += [{"layer": layer.name, "size": p.size, "latency_s": p.latency, "latency_mean_s": p.latency_mean,
                      "bandwidth_Bps": p.bandwidth, "spread": p.spread, "stable": p.stable, "n": p.n,
                      "validated": p.validated} for p in layer.points]
        points = Table(["Layer", "Size (bytes)", "Avg latency (us)", "Median (us)", "Bandwidth (MB/s)", "Spread",
                        "Note"], rows, f"time per message, one-way latency for the ping-pong layers "
                                       f"({', '.join(PINGPONG)}); median over repeats, spread = (max - min) / median",
                       left=2)
        fits = Table(["Layer", "alpha (us) [95% CI]", "beta (MB/s) [95% CI]", "n1/2 (bytes)", "RMS rel. residual",
                      "Bandwidth dips at (bytes)"], fit_rows,
                     "Hockney fit t(n) = alpha + n / beta (poor: residual above 0.10 or an implausible parameter); "
                     "a dip is a size whose median bandwidth over repeats is more than 10% below both neighbours, "
                     "significantly (Welch's t-test over repeats, p < 0.05)")
        notes += [f"{f.metric}: {f.value:.3f} {f.unit} ({f.statistic})" for f in self.headline(s)]
        notes += [f"layer time budget used up: {c} left out (not measured)" for c in s.cut]
        return View([points, fits], notes, {"p2p": data})

    def plots(self, runs):
        out = []
        for label, s in runs:
            pair = " <-> ".join(s.hosts) or label
            lat = {x.name: ([p.size for p in x.points if p.latency], [p.latency * 1e6 for p in x.points if p.latency])
                   for x in s.layers if x.kind == "latency"}
            bw = {x.name: ([p.size for p in x.points if p.bandwidth],
                           [p.bandwidth / 1e6 for p in x.points if p.bandwidth]) for x in s.layers}
            out.append(Plot("line", f"Latency per layer, {pair}", "message size (bytes)",
                            "one-way latency (us, median)", lat, logx=True, logy=True))
            out.append(Plot("line", f"Bandwidth per layer, {pair}", "message size (bytes)", "bandwidth (MB/s, median)",
                            bw, logx=True))
        return out
