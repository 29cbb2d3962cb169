"""`rmax experiment`: measure before and after a setting change, then restore it."""

from __future__ import annotations

import click

from rmax.cli.output import console, json_option, print_json
from rmax.params import HOSTFILE, HOSTS, TIMEOUT, Count
from rmax.errors import RmaxError, RunFailed
from rmax.launch import REGISTRY
from rmax.stats import MIN_CHANGE
from rmax.nic.mtu_results import REPEATS, Collector


@click.group("experiment")
def command():
    """Measure under each value of a setting (e.g. MTU), restoring it afterwards."""


def _scaled(value, factor: float):
    return None if value is None else value * factor


def _pair_results(m: dict) -> dict:
    """Near (same switch) and far (across a trunk, when there is one) latency/bandwidth from a 2-3 node
    probe, in the units shown (us, MB/s)."""
    lat, bw = m["latency_s"][0], m["bandwidth_Bps"][0]
    out = {"latency_us": _scaled(lat[1], 1e6), "bandwidth_MBps": _scaled(bw[1], 1e-6)}
    if len(m["hosts"]) > 2:
        out.update(trunk_latency_us=_scaled(lat[2], 1e6), trunk_bandwidth_MBps=_scaled(bw[2], 1e-6))
    return out


def _tcp_pair(rec, size: int) -> dict:
    """Latency at 1 byte and bandwidth at `size` bytes from an rmax-net run of the TCP layer."""
    from rmax.bench.family import loaded

    got = loaded(rec)
    lat, bw = (got[1].point("tcp", 1), got[1].point("tcp", size)) if got else (None, None)
    if not lat or not bw or not lat[2].latency or not bw[2].bandwidth:
        raise RunFailed(f"the TCP layer reported no latency at 1 byte or no bandwidth at {size} bytes")
    return {"latency_us": lat[2].latency * 1e6, "bandwidth_MBps": bw[2].bandwidth * 1e-6}


def _short_hpl(store, parent: str, mtu: int, hosts, hostfile, launcher, hpl_n: int, grid, engine: str,
               timeout: float) -> dict:
    """The short HPL on every slot of hosts, stored under parent; its row fields."""
    from rmax.bench.family import RunContext, run
    from rmax.bench.hpl import HPL
    from rmax.hpl.dat import HplConfig
    from rmax.launch import LaunchSpec

    cfg = HplConfig(ns=[hpl_n], nbs=[96], grids=[tuple(grid)])
    spec = LaunchSpec([], np=sum(h.slots for h in hosts), hosts=list(hosts), hostfile=hostfile)
    rec = run(HPL, HPL.options(config=cfg, engine=engine),
              RunContext(store=store, parent=parent, label=f"MTU {mtu}", spec=spec, launcher=launcher, timeout=timeout))
    best = HPL.load(rec).best()
    return {"hpl_gflops": best.gflops if best else None, "hpl_run": rec.id, "hpl_status": rec.status}


def _add_hpl(col, m: int, hpl: dict) -> None:
    col.add(m, [hpl["hpl_run"]], hpl_gflops=hpl["hpl_gflops"])
    if hpl["hpl_status"] != "ok" or "hpl_status" not in col.extra[m]:
        col.extra[m]["hpl_status"] = hpl["hpl_status"]


def _print_table(title: str, rows: list[dict], repeats: int) -> None:
    from rmax.terminal import Table

    from rmax.nic.mtu_results import table

    columns, cells, caption = table(rows, repeats)
    t = Table(title=title, caption=caption)
    for c in columns:
        t.add_column(c)
    for row in cells:
        t.add_row(*row)
    console.print(t)
    for r in rows:
        if r.get("error"):
            console.print(f"MTU {r['mtu']}: {r['error']}")
    console.print("runs: " + "; ".join(f"MTU {r['mtu']}: {', '.join(x[:8] for x in r['runs'])}" for r in rows))


@command.command("mtu")
@click.argument("mtus")
@click.option("--vcluster", "vcluster_name", default=None, metavar="NAME",
              help="Virtual cluster to change (default: the only one up).")
@click.option("--interface", "interfaces", multiple=True, metavar="IFACE",
              help="Real interface to change on every host of --hosts/--hostfile instead (needs --yes).")
@click.option("--hosts", type=HOSTS, default=None,
              help="With --interface: the hosts (2 or more); latency and bandwidth between the first two.")
@click.option("--hostfile", type=HOSTFILE, default=None,
              help="With --interface: the hosts of a hostfile instead of --hosts.")
@click.option("--launcher", type=click.Choice(sorted(REGISTRY)), default=None,
              help="With --interface: how to reach the hosts (default: srun inside Slurm, else mpirun).")
@click.option("--yes", is_flag=True, help="Really change the MTU of real interfaces.")
@click.option("--hpl-n", type=Count(0, 1 << 20), default=1200, show_default=True, help="Problem size of the short HPL (0: none).")
@click.option("--bytes", "size", type=Count(1, 1 << 30), default=4_000_000, show_default=True, help="Bytes per bandwidth transfer.")
@click.option("--timeout", type=TIMEOUT, default=300.0, show_default=True,
              help="Seconds per HPL run (and, with --interface, per latency/bandwidth run).")
@click.option("--repeats", type=Count(1, 100), default=REPEATS, show_default=True,
              help="Measurements per MTU, the MTUs taking turns; medians, 95% CIs and Welch's t-test use them.")
@json_option
def mtu_cmd(mtus, vcluster_name, interfaces, hosts, hostfile, launcher, yes, hpl_n, size, timeout, repeats, as_json):
    """Latency, bandwidth and a short HPL under each MTU; the MTUs are restored afterwards.

    Example: rmax experiment mtu 1500,9000
    (real NICs: rmax experiment mtu 1500,9000 --interface eth1 --hostfile nodes --yes)"""
    from rmax.nic import mtu as mt

    values = mt.parse_mtus(mtus)
    if interfaces:
        if not yes:
            raise RmaxError(f"changing the MTU of real interfaces ({', '.join(interfaces)}) needs --yes",
                            hint="other traffic on them is disturbed while the experiment runs")
        if vcluster_name:
            raise RmaxError("give --vcluster or --interface, not both")
        names = mt.check_interfaces(interfaces)
        host_list = _real_hosts(hosts, hostfile)
        rec = _run_hosts(host_list, hostfile, names, launcher, values, hpl_n, size, timeout, repeats, mt)
        title = (f"MTU experiment on {', '.join(names)} of {', '.join(rec.summary['hosts'])} "
                 f"(run {rec.id[:8]}; MTUs restored)")
    else:
        if hosts or hostfile or launcher:
            raise RmaxError("--hosts, --hostfile and --launcher go with --interface",
                            hint="on a virtual cluster every link changes; pick the cluster with --vcluster")
        from rmax.vcluster import find
        from rmax.vcluster.system import require_root

        require_root("rmax experiment mtu")
        state = find(vcluster_name, "--vcluster NAME")
        rec = _run(state, values, hpl_n, size, timeout, repeats, mt)
        title = f"MTU experiment on virtual cluster {state.name} (run {rec.id[:8]}; MTUs restored)"
    if as_json:
        print_json(rec.as_dict())   # the stored run, as every command's --json shows it
        return
    _print_table(title, rec.summary["results"], repeats)


def _real_hosts(hosts: str | None, hostfile: str | None):
    from rmax.launch import parse_hosts, read_hostfile

    if hosts and hostfile:
        raise RmaxError("give --hosts or --hostfile, not both")
    host_list = parse_hosts(hosts) if hosts else read_hostfile(hostfile) if hostfile else []
    if len(host_list) < 2:
        got = f"only {host_list[0].name}" if host_list else "none"
        raise RmaxError(f"an MTU experiment on real interfaces needs at least 2 hosts ({got} given): "
                        "the MTU matters between nodes", hint="give --hosts a,b or --hostfile FILE")
    return host_list


def _run(state, values, hpl_n, size, timeout, repeats, mt):
    from rmax.launch import read_hostfile
    from rmax.model.hpl_model import square_grid
    from rmax.store import open_store
    from rmax.vcluster.probe import measure_matrix

    plan = state.plan
    # Probe the first node's nearest neighbour, and a node behind a trunk when there is one.
    probe_nodes = [plan.nodes[0].name]
    same = [n.name for n in plan.nodes[1:] if n.switch == plan.nodes[0].switch]
    other = [n.name for n in plan.nodes if n.switch != plan.nodes[0].switch]
    probe_nodes += same[:1] + other[:1]
    if len(probe_nodes) < 2:
        raise RmaxError("the virtual cluster needs at least 2 nodes for an MTU experiment")
    hosts = read_hostfile(state.hostfile)
    p, q = square_grid(sum(h.slots for h in hosts))
    engine = mt.hpl_engine()
    col = Collector(values)
    with open_store() as store:
        with store.start_run("experiment-mtu", params={"mtus": values, "cluster": plan.name, "hpl_n": hpl_n,
                                                       "engine": engine, "grid": [p, q], "bytes": size,
                                                       "repeats": repeats},
                             hosts=[n.name for n in plan.nodes]) as run:
            with mt.mtu_changes(mt.vcluster_links(state)) as set_mtu:
                # The MTUs take turns within each repeat, so a slow spell of the host lands on
                # every MTU alike instead of on whichever was measured then.
                for rep in range(repeats):
                    for m in values:
                        set_mtu(m)
                        with store.start_run("tcp-matrix", parent=run.id, label=f"MTU {m} repeat {rep + 1}",
                                             hosts=probe_nodes, params={"cluster": plan.name, "mtu": m,
                                                                        "bytes": size, "repeat": rep + 1}) as pr:
                            mat = measure_matrix(state, probe_nodes, size=size, pings=200)
                            pr.update(summary={k: v for k, v in mat.items() if k != "samples"}, samples=mat["samples"])
                        col.add(m, [pr.id], **_pair_results(mat))
                        if hpl_n:
                            _add_hpl(col, m, _short_hpl(store, run.id, m, hosts, str(state.hostfile), "vcluster",
                                                        hpl_n, (p, q), engine, timeout))
                        run.update(summary=_summary(col, repeats, engine, (p, q)))
        return store.get(run.id)


def _summary(col: Collector, repeats: int, engine: str, grid, **extra) -> dict:
    return {"results": col.rows(), "repeats": repeats, "baseline_mtu": col.mtus[0], "engine": engine,
            "grid": list(grid), "statistic": "per MTU: median over repeats and their range; change against the "
                                             "baseline MTU only when Welch's t-test over repeats, Holm-adjusted, "
                                             f"gives p < 0.05 and it is at least {MIN_CHANGE:.0%}",
            **extra}


def _run_hosts(host_list, hostfile, interfaces, launcher, values, hpl_n, size, timeout, repeats, mt):
    """The experiment on real interfaces: the MTUs are read and set on every host through the launcher,
    latency and bandwidth measured between the first two hosts (rmax-net's TCP layer), HPL on all."""
    from rmax.bench.family import RunContext, get, run as run_family
    from rmax.bench.netlaunch import check_message_sizes
    from rmax.launch import Host, LaunchSpec
    from rmax.model.hpl_model import square_grid
    from rmax.store import open_store

    check_message_sizes([size], "--bytes")
    names = [h.name for h in host_list]
    a, b = names[:2]
    p, q = square_grid(sum(h.slots for h in host_list))
    engine = mt.hpl_engine()
    # one repeat per rmax-net run: the experiment's own repeats alternate the MTUs between runs
    net = get("net")
    options = net.options(layers=("tcp",), sizes=tuple(sorted({1, size})), perturb=False, repeats=1)
    original = {h: mt.host_mtus(h, interfaces, launcher) for h in names}   # before any run: nothing changed yet
    col = Collector(values)
    with open_store() as store:
        params = {"mtus": values, "interfaces": interfaces, "hosts": names, "pair": [a, b], "launcher": launcher,
                  "original_mtus": original, "hpl_n": hpl_n, "engine": engine, "grid": [p, q], "bytes": size,
                  "repeats": repeats}
        with store.start_run("experiment-mtu", params=params, hosts=names) as run:
            with mt.host_mtu_changes(names, interfaces, launcher, original) as apply:
                for _ in range(repeats):
                    for m in values:
                        if m in col.errors:
                            continue   # traffic already failed at this MTU: no point in stalling again
                        col.extra[m]["applied"] = apply(m)
                        pair = LaunchSpec([], np=2, hosts=[Host(a, 1), Host(b, 1)])
                        rec = None
                        try:
                            rec = run_family(net, options, RunContext(store=store, parent=run.id, spec=pair,
                                                                      launcher=launcher, timeout=timeout))
                            if rec.status != "ok":
                                raise RunFailed(f"rmax-net {rec.status}: {rec.error}")
                            col.add(m, [rec.id], **_tcp_pair(rec, size))
                        except RmaxError as e:   # RunFailed too: e.g. a switch port that drops frames of m bytes
                            col.fail(m, f"traffic failed at MTU {m} between {a} and {b} ({e.message}); check "
                                        f"that every switch port between them carries frames of {m} bytes",
                                     [rec.id] if rec else [])
                            continue
                        if hpl_n:
                            _add_hpl(col, m, _short_hpl(store, run.id, m, host_list, hostfile, launcher, hpl_n,
                                                        (p, q), engine, timeout))
                        run.update(summary=_summary(col, repeats, engine, (p, q), hosts=names,
                                                    interfaces=interfaces, original_mtus=original))
            run.update(summary=_summary(col, repeats, engine, (p, q), hosts=names, interfaces=interfaces,
                                        original_mtus=original))
        return store.get(run.id)
