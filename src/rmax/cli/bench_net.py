"""`rmax bench net | coll | ring | bisect | matrix`: network and MPI microbenchmarks (rmax-net)."""

from __future__ import annotations

import click

from rmax.bench.netlaunch import MAX_MESSAGE
from rmax.cli.launch_options import launch_options
from rmax.launch.request import spec_from_options
from rmax.cli.output import console, fmt, json_option, run_and_show
from rmax.params import TOPOLOGY, Count, NumberList, Seconds, Size, SizeList
from rmax.launch.base import MAX_RANKS
from rmax.sizes import human_size


def say(text: str) -> None:
    console.print(text, soft_wrap=True, markup=False, highlight=False)


# rmax-net's message sizes: 0 bytes up to its largest (MPI counts are C ints).
SIZE, SIZES = Size(0, MAX_MESSAGE), SizeList(0, MAX_MESSAGE)


def _spec(default_np: int | None, **opts):
    return spec_from_options([], default_np=default_np, **opts)


# ---------------------------------------------------------------- net
@click.command("net")
@click.option("--layers", default=",".join(("mpi", "mpi-nonblocking", "mpi-stream", "mpi-bidir", "tcp", "udp")),
              show_default=True, help="Comma-separated layers.")
@click.option("--sizes", type=SIZES, default=None, help="Explicit sizes instead of NetPIPE's schedule.")
@click.option("--max-size", type=SIZE, default="8MiB", show_default=True, help="Largest size of the schedule.")
@click.option("--no-perturb", is_flag=True, help="Leave out the +-3-byte points of the schedule.")
@click.option("--window", type=Count(1, 1024), default=64, show_default=True,
              help="Messages in flight for stream and bidirectional.")
@click.option("--budget", type=Seconds(0.001, 3600, lo_open=False), default=None,
              help="Seconds of timed repetitions per layer and size [default: 0.05, quick 0.01].")
@click.option("--max-samples", type=Count(5, 100000), default=None, help="Most samples per point.")
@click.option("--batch", type=Seconds(1e-5, 10, lo_open=False), default=None,
              help="Seconds one timed batch (one sample) lasts [default: 0.001; NetPIPE's trials: 0.25].")
@click.option("--one-buffer", is_flag=True,
              help="Ping-pongs send back the buffer just received, as NetPIPE does (OSU uses two buffers).")
@click.option("--offset", type=Count(0, 4095), default=0, show_default=True,
              help="Bytes past a page boundary where the buffers start (NetPIPE's large malloc'ed buffer: 16).")
@click.option("--validate", is_flag=True, help="Check every byte of every message (slower).")
@click.option("--repeats", type=Count(1, 1000), default=3, show_default=True,
              help="Times the whole schedule is measured: each point's spread across repeats, and the dips' t-test.")
@click.option("--quick", is_flag=True, help="No +-3-byte points and a short budget.")
@launch_options(default_np="2")
@json_option
def net_cmd(layers, sizes, max_size, no_perturb, window, budget, max_samples, batch, one_buffer, offset, validate,
            repeats, quick, launcher, timeout, as_json, **opts):
    """Ping-pong latency and bandwidth vs message size between two ranks, over MPI
    (blocking, non-blocking, stream, bidirectional) and over TCP and UDP sockets.

    Example: rmax bench net --hosts node1:1,node2:1"""
    from rmax.bench import net

    o = net.NetOptions.quick() if quick else net.NetOptions()
    o.layers = tuple(x.strip() for x in layers.split(",") if x.strip())
    o.sizes, o.max_size, o.window, o.validate, o.batch = sizes, max_size, window, validate, batch
    o.one_buffer, o.repeats, o.offset = one_buffer, repeats, offset
    o.perturb = o.perturb and not no_perturb
    o.budget = budget if budget is not None else o.budget
    o.max_samples = max_samples if max_samples is not None else o.max_samples
    spec = _spec(2, **opts)

    def start(tick):
        return net.run(spec, quick=quick, options=o, launcher=launcher, timeout=timeout, on_point=tick)

    run_and_show("net", start, print_net, as_json)


def _spread(p: dict) -> str:
    if p.get("stable") is None:
        return "—"
    return f"{p['spread'] * 100:.0f}%" + ("" if p["stable"] else " UNSTABLE")


def print_net(record) -> None:
    s = record.summary
    reps = s.get("repeats", 1)
    say(f"# rmax net (run {record.id[:8]}): hosts {', '.join(s.get('hosts', []))}; "
        f"{s.get('mpi_library') or ''}; {reps} repeat(s) of the schedule")
    for name, layer in s.get("layers", {}).items():
        bw_col = "Bandwidth (MB/s)"
        say(f"\n# {name} ({'one-way latency' if layer['kind'] == 'latency' else 'time per message'}; "
            "median over repeats, spread = (max - min) / median)")
        say(f"# {'Size':<10} {'Avg Latency(us)':>16} {'Median(us)':>12} {bw_col:>18} {'Spread':>14}")
        flagged = {a["size"] for a in layer.get("anomalies", [])}
        for p in layer["points"]:
            lat = p["latency"]
            say(f"  {p['size']:<10} {fmt(p['latency_mean'] and p['latency_mean'] * 1e6):>16} "
                f"{fmt(lat and lat * 1e6):>12} {fmt(p['bandwidth'] and p['bandwidth'] / 1e6):>18} {_spread(p):>14}"
                + ("  dip" if p["size"] in flagged else "") + ("" if p["validated"] else "  INVALID"))
        h = layer.get("hockney", {})
        if "alpha" in h:
            a_lo, a_hi = h.get("alpha_ci95", [None, None])
            b_lo, b_hi = h.get("beta_ci95", [None, None])
            say(f"# Hockney: alpha = {h['alpha'] * 1e6:.3f} us [95% CI {fmt(a_lo and a_lo * 1e6, '.3f')}, "
                f"{fmt(a_hi and a_hi * 1e6, '.3f')}], beta = {h['beta'] / 1e6:.0f} MB/s [95% CI "
                f"{fmt(b_lo and b_lo / 1e6, '.0f')}, {fmt(b_hi and b_hi / 1e6, '.0f')}], n1/2 = {h['n_half']:.0f} B; "
                f"relative RMS residual {h['rms_rel_residual']:.2f} ({h.get('quality', '?')} fit)")
            for w in h.get("warnings", []):
                say(f"# warning: {w}")
        if layer.get("anomalies"):
            say("# bandwidth dips (>10% below both neighbours, Welch's t-test over repeats p < 0.05): "
                + ", ".join(f"{a['size']} B (-{a['drop'] * 100:.0f}%)" for a in layer["anomalies"]))
        elif not layer.get("dips_tested"):
            say("# dips not tested: one repeat cannot tell a dip from a preemption (use --repeats 3)")
        if layer.get("unstable"):
            say(f"# {len(layer['unstable'])} of {len(layer['points'])} points UNSTABLE (repeats differ by more "
                "than 10%): a single run of these sizes cannot be trusted")
    h = s.get("headline", {})
    for key, label, scale, unit in (("latency_1B", "1 B latency", 1e6, "us"),
                                    ("bandwidth_1MiB", "1 MiB bandwidth", 1e-6, "MB/s")):
        if h.get(key) is not None:
            st = h.get(f"{key}_stable")
            note = ("one repeat: no spread known" if st is None else
                    f"spread {h[f'{key}_spread'] * 100:.0f}% over {h[f'{key}_repeats']} repeats: "
                    + ("stable" if st else "UNSTABLE, a single run cannot be trusted"))
            say(f"# {label}: {h[key] * scale:.3f} {unit} ({note})")


def _list(text: str | None) -> tuple[str, ...] | None:
    return tuple(x.strip() for x in text.split(",") if x.strip()) if text else None


# ---------------------------------------------------------------- coll
@click.command("coll")
@click.option("--ops", default=None, help="Operations [default: bcast,reduce,allreduce,allgather,alltoall,barrier].")
@click.option("--sizes", type=SIZES, default=None, help="Bytes per rank [default: 8 B to 1 MiB; quick: 8, 64K].")
@click.option("--procs", type=NumberList(2, MAX_RANKS, integer=True), default=None, help="Process counts [default: 2, 4, ..., all].")
@click.option("--orders", default=None, help="Rank orders: natural, reversed, random, cyclic, serpentine [default: natural,reversed,random].")
@click.option("--seed", type=Count(1, 2**31 - 1), default=1, show_default=True, help="Seed of the random order.")
@click.option("--budget", type=Seconds(0.001, 3600, lo_open=False), default=None, help="Seconds per point.")
@click.option("--quick", is_flag=True, help="Two sizes and a short budget.")
@launch_options()
@json_option
def coll_cmd(ops, sizes, procs, orders, seed, budget, quick, launcher, timeout, as_json, **opts):
    """Collectives vs message size, process count (2, 4, ..., all) and rank order,
    with min, avg and max over the ranks.

    Example: rmax bench coll --np 4 --oversubscribe --quick"""
    from rmax.bench import coll

    o = coll.CollOptions.quick() if quick else coll.CollOptions()
    o.ops = _list(ops) or o.ops
    o.orders = _list(orders) or o.orders
    o.sizes = sizes or o.sizes
    o.procs = tuple(procs) if procs else None
    o.seed = seed
    o.budget = budget if budget is not None else o.budget
    spec = _spec(None, **opts)

    def start(tick):
        return coll.run(spec, quick=quick, options=o, launcher=launcher, timeout=timeout, on_point=tick)

    def show(record):
        s = record.summary
        say(f"# rmax coll (run {record.id[:8]}): {len(s['hosts'])} ranks on {', '.join(sorted(set(s['hosts'])))}")
        op = None
        for p in sorted(s["points"], key=lambda p: (coll.OPS.index(p["op"]), p["order"], p["procs"], p["size"])):
            if p["op"] != op:
                op = p["op"]
                say(f"\n# {op}\n# {'Procs':>5} {'Order':<9} {'Size':>10} {'Avg Latency(us)':>16} "
                    f"{'Min Latency(us)':>16} {'Max Latency(us)':>16}")
            say(f"  {p['procs']:>5} {p['order']:<9} {p['size']:>10} {fmt(p['avg'] and p['avg'] * 1e6):>16} "
                f"{fmt(p['min'] and p['min'] * 1e6):>16} {fmt(p['max'] and p['max'] * 1e6):>16}"
                + ("" if p["validated"] else "  INVALID"))

    run_and_show("coll", start, show, as_json)


# ---------------------------------------------------------------- ring
@click.command("ring")
@click.option("--lat-size", type=SIZE, default="8", show_default=True, help="Latency message size (HPCC: 8).")
@click.option("--bw-size", type=SIZE, default="2000000", show_default=True,
              help="Bandwidth message size (HPCC: 2,000,000).")
@click.option("--random-rings", type=Count(0, 10000), default=None, help="Random rings [default: 10].")
@click.option("--seed", type=Count(1, 2**31 - 1), default=1, show_default=True)
@click.option("--budget", type=Seconds(0.001, 3600, lo_open=False), default=None, help="Seconds per measurement.")
@click.option("--no-links", is_flag=True, help="Skip timing each link alone.")
@click.option("--quick", is_flag=True, help="Three random rings and a short budget.")
@launch_options()
@json_option
def ring_cmd(lat_size, bw_size, random_rings, seed, budget, no_links, quick, launcher, timeout, as_json, **opts):
    """Naturally and randomly ordered ring latency and bandwidth (HPCC's definitions),
    and each link's time so that a slow hop stands out.

    Example: rmax bench ring --hostfile hosts"""
    from rmax.bench import ring

    o = ring.RingOptions.quick() if quick else ring.RingOptions()
    o.lat_size, o.bw_size, o.seed, o.links = lat_size, bw_size, seed, not no_links
    o.random_rings = random_rings if random_rings is not None else o.random_rings
    o.budget = budget if budget is not None else o.budget
    spec = _spec(None, **opts)

    def start(tick):
        return ring.run(spec, quick=quick, options=o, launcher=launcher, timeout=timeout, on_point=tick)

    def show(record):
        s = record.summary

        def us(v):
            return fmt(v and v * 1e6, ".3f")

        def mbs(v):
            return fmt(v and v / 1e6, ".0f")
        say(f"# rmax ring (run {record.id[:8]}): {len(s['hosts'])} ranks; HPCC statistics (best of samples)")
        say(f"# {'Ring':<22} {'Latency(us)':>12} {'Bandwidth (MB/s)':>18}")
        say(f"  {'naturally ordered':<22} {us(s.get('natural_latency')):>12} {mbs(s.get('natural_bandwidth')):>18}")
        say(f"  {'randomly ordered':<22} {us(s.get('random_latency')):>12} {mbs(s.get('random_bandwidth')):>18}")
        if s["links"]:
            say(f"\n# Links of the natural ring, each alone\n# {'From':>4} {'To':>4} {'Size':>10} "
                f"{'Avg Latency(us)':>16} {'Bandwidth (MB/s)':>18}")
            for link in s["links"]:
                say(f"  {link['from']:>4} {link['to']:>4} {link['size']:>10} {us(link['time']):>16} "
                    f"{mbs(link['time'] and link['size'] / link['time']):>18}"
                    + ("  SLOW" if link["slow"] else "") + ("" if link["validated"] else "  INVALID"))

    run_and_show("ring", start, show, as_json)


# ---------------------------------------------------------------- bisect
@click.command("bisect")
@click.option("--size", type=SIZE, default=None, help="Message size [default: 1 MiB; quick 256 KiB].")
@click.option("--window", type=Count(1, 1024), default=16, show_default=True)
@click.option("--bisections", type=Count(1, 10000), default=None, help="Random bisections [default: 5].")
@click.option("--seed", type=Count(1, 2**31 - 1), default=1, show_default=True)
@click.option("--budget", type=Seconds(0.001, 3600, lo_open=False), default=None, help="Seconds per bisection.")
@click.option("--topology", type=TOPOLOGY, default=None,
              help="cluster.toml with the switch groups [default: a virtual cluster's, else the latest inference].")
@click.option("--quick", is_flag=True, help="Three bisections and a short budget.")
@launch_options()
@json_option
def bisect_cmd(size, window, bisections, seed, budget, topology, quick, launcher, timeout, as_json, **opts):
    """Bisection bandwidth: half the ranks stream to the other half, across the cut between the
    switch groups when they are known, and over random bisections.

    Example: rmax bench bisect --hostfile hosts"""
    from rmax.bench import bisect

    o = bisect.BisectOptions.quick() if quick else bisect.BisectOptions()
    o.size = size or o.size
    o.window, o.seed = window, seed
    o.bisections = bisections or o.bisections
    o.budget = budget if budget is not None else o.budget
    o.topology = topology
    spec = _spec(None, **opts)

    def start(tick):
        return bisect.run(spec, quick=quick, options=o, launcher=launcher, timeout=timeout, on_point=tick)

    def show(record):
        s = record.summary
        say(f"# rmax bisect (run {record.id[:8]}): {len(s['hosts'])} ranks, {human_size(s['size'])} messages, "
            f"window {s['window']}")
        p = record.params
        between = any(c["cut"] == "switch groups" for c in s["bisections"])
        say("# switch groups: " + (f"{len(p['groups'])} from {p['groups_source']}" if p.get("groups")
                                   else f"none known ({p.get('groups_source')}): random cuts only")
            + ("" if between or not p.get("groups") else
               "; the ranks' hosts are not all in them, or all in one: random cuts only"))
        hosts = s["hosts"]
        say(f"# {'Bisection':<10} {'Cut':<14} {'Pairs':>6} {'Bandwidth (MB/s)':>18} {'Slowest pair (MB/s)':>20}")
        for c in s["bisections"]:
            slow = min((p["bandwidth"] for p in c["pairs"] if p["bandwidth"]), default=None)
            say(f"  {c['bisection']:<10} {c['cut']:<14} {len(c['pairs']):>6} "
                f"{fmt(c['bandwidth'] and c['bandwidth'] / 1e6):>18} {fmt(slow and slow / 1e6):>20}"
                + ("" if c["validated"] else "  INVALID"))
            if c["cut"] == "switch groups":
                say("    pairs: " + ", ".join(f"{hosts[p['from']]}->{hosts[p['to']]}" for p in c["pairs"]))
        say(f"# bisection bandwidth: worst {fmt(s['bandwidth_min'] and s['bandwidth_min'] / 1e6)} MB/s "
            f"({s.get('worst_cut')} cut), median of the random cuts "
            f"{fmt(s.get('bandwidth_random_median') and s['bandwidth_random_median'] / 1e6)} MB/s")

    run_and_show("bisect", start, show, as_json)


# ---------------------------------------------------------------- matrix
@click.command("matrix")
@click.option("--lat-size", type=SIZE, default="8", show_default=True)
@click.option("--bw-size", type=SIZE, default=None, help="Bandwidth message size [default: 1 MiB; quick 256 KiB].")
@click.option("--window", type=Count(1, 1024), default=8, show_default=True)
@click.option("--budget", type=Seconds(0.001, 3600, lo_open=False), default=None, help="Seconds per pair and measurement.")
@click.option("--no-retest", is_flag=True, help="Report suspects without measuring them alone.")
@click.option("--retests", type=Count(1, 100), default=3, show_default=True,
              help="Alone measurements per suspect (Welch's t-test against its class needs 2 or more).")
@click.option("--topology", type=TOPOLOGY, default=None,
              help="cluster.toml with the switch groups [default: a virtual cluster's, else the latest inference].")
@click.option("--quick", is_flag=True, help="Smaller messages and a short budget.")
@launch_options()
@json_option
def matrix_cmd(lat_size, bw_size, window, budget, no_retest, retests, topology, quick, launcher, timeout, as_json,
               **opts):
    """All-pairs latency and bandwidth matrices in N-1 rounds of N/2 concurrent pairs;
    a pair far from its class (same switch, across switches) is measured alone, and
    flagged only when alone it still differs significantly.

    Example: rmax bench matrix --hostfile hosts"""
    from rmax.bench import matrix

    o = matrix.MatrixOptions.quick() if quick else matrix.MatrixOptions()
    o.lat_size, o.window, o.retest, o.retests, o.topology = lat_size, window, not no_retest, retests, topology
    o.bw_size = bw_size or o.bw_size
    o.budget = budget if budget is not None else o.budget
    spec = _spec(None, **opts)

    def start(tick):
        return matrix.run(spec, quick=quick, options=o, launcher=launcher, timeout=timeout, on_point=tick)

    def show(record):
        s = record.summary
        names = s.get("labels") or [str(i) for i in range(len(s["hosts"]))]
        width = max(10, *(len(x) + 2 for x in names))
        say(f"# rmax matrix (run {record.id[:8]}): {len(names)} ranks, {s['rounds']} rounds; row = from, "
            f"column = to; measured concurrently (every pair of a round at once); classes: {s.get('classes')}")
        for kind, unit, scale, spec_ in (("latency", "Latency (us)", 1e6, ".2f"),
                                         ("bandwidth", "Bandwidth (MB/s)", 1e-6, ".0f")):
            say(f"\n# {unit}, concurrent\n  {'':<{width}}" + "".join(f"{x:>{width}}" for x in names))
            for i, row in enumerate(s[kind]):
                cells = ["—" if i == j else fmt(v and v * scale, spec_) for j, v in enumerate(row)]
                say(f"  {names[i]:<{width}}" + "".join(f"{c:>{width}}" for c in cells))
        if s["suspects"]:
            say(f"\n# Suspects measured alone ({s.get('retests')} times each), against their class under load")
            say(f"# {'From':<{width}} {'To':<{width}} {'Kind':<10} {'Class':<7} {'Concurrent':>12} {'Alone':>12} "
                f"{'Class median':>13} {'p':>7}  Verdict")
            for x in s["suspects"]:
                sc, sp = (1e6, ".2f") if x["kind"] == "latency" else (1e-6, ".0f")
                say(f"  {names[x['from']]:<{width}} {names[x['to']]:<{width}} {x['kind']:<10} {x['class']:<7} "
                    f"{fmt(x['concurrent'] and x['concurrent'] * sc, sp):>12} "
                    f"{fmt(x['alone_median'] and x['alone_median'] * sc, sp):>12} "
                    f"{fmt(x['class_median'] and x['class_median'] * sc, sp):>13} {fmt(x['p'], '.3f'):>7}  "
                    f"{x['verdict'].upper() if x['flagged'] else x['verdict']}")
        say(f"# {len(s['suspects'])} suspects, {len(s['flagged'])} flagged, {len(s.get('contention', []))} slowed only "
            "by the concurrent load (latency us, bandwidth MB/s)")

    run_and_show("matrix", start, show, as_json)
