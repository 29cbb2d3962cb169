"""`rmax experiment`: measure before and after a setting change, then restore it."""

from __future__ import annotations

import click

from rmax.cli.output import console, fmt, json_option, print_json
from rmax.errors import RmaxError


@click.group("experiment")
def command():
    """Measure under each value of a setting (e.g. MTU), restoring it afterwards."""


def _pair_results(m: dict) -> dict:
    """Near (same switch) and far (across a trunk, when there is one) latency/bandwidth from a 2-3 node probe."""
    out = {"latency_us": m["latency_s"][0][1] * 1e6, "bandwidth_MBps": m["bandwidth_Bps"][0][1] / 1e6}
    if len(m["hosts"]) > 2:
        out.update(trunk_latency_us=m["latency_s"][0][2] * 1e6, trunk_bandwidth_MBps=m["bandwidth_Bps"][0][2] / 1e6)
    return out


@command.command("mtu")
@click.argument("mtus")
@click.option("--vcluster", "vcluster_name", default=None, metavar="NAME",
              help="Virtual cluster to change (default: the only one up).")
@click.option("--interface", "interfaces", multiple=True, metavar="IFACE",
              help="Real interface of this node to change instead (needs --yes).")
@click.option("--yes", is_flag=True, help="Really change the MTU of real interfaces.")
@click.option("--hpl-n", type=int, default=1200, show_default=True, help="Problem size of the short HPL (0: none).")
@click.option("--bytes", "size", type=int, default=4_000_000, show_default=True, help="Bytes per bandwidth transfer.")
@click.option("--timeout", type=float, default=300.0, show_default=True, help="Seconds per HPL run.")
@json_option
def mtu_cmd(mtus, vcluster_name, interfaces, yes, hpl_n, size, timeout, as_json):
    """Latency, bandwidth and a short HPL under each MTU; the MTUs are restored afterwards.

    Example: rmax experiment mtu 1500,9000"""
    from rmax.nic import mtu as mt

    values = mt.parse_mtus(mtus)
    if interfaces:
        if not yes:
            raise RmaxError(f"changing the MTU of real interfaces ({', '.join(interfaces)}) needs --yes",
                            hint="other traffic on them is disturbed while the experiment runs")
        raise RmaxError("MTU experiments on real interfaces are not implemented yet",
                        hint="run it on a virtual cluster (rmax vcluster up) for now")
    if hpl_n < 0 or size < 1:
        raise RmaxError("--hpl-n must be 0 or more and --bytes positive")
    from rmax.vcluster import find
    from rmax.vcluster.system import require_root

    require_root("rmax experiment mtu")
    state = find(vcluster_name)
    results = _run(state, values, hpl_n, size, timeout, mt)
    if as_json:
        print_json(results)
        return
    from rich.table import Table

    t = Table(title=f"MTU experiment on virtual cluster {state.name} (run {results['run'][:8]}; MTUs restored)")
    for col in ("MTU", "Latency (us)", "Bandwidth (MB/s)", "Trunk latency (us)", "Trunk bandwidth (MB/s)",
                "HPL (GFLOPS)"):
        t.add_column(col)
    for r in results["results"]:
        t.add_row(str(r["mtu"]), fmt(r["latency_us"], ".1f"), fmt(r["bandwidth_MBps"], ".1f"),
                  fmt(r.get("trunk_latency_us"), ".1f"), fmt(r.get("trunk_bandwidth_MBps"), ".1f"),
                  fmt(r.get("hpl_gflops"), ".3f"))
    console.print(t)


def _run(state, values, hpl_n, size, timeout, mt) -> dict:
    from rmax.hpl.dat import HplConfig
    from rmax.hpl.run import run_hpl
    from rmax.launch import LaunchSpec, read_hostfile
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
    ranks = sum(h.slots for h in hosts)
    p, q = mt.grid_for(ranks)
    engine = mt.hpl_engine()
    rows = []
    with open_store() as store:
        with store.start_run("experiment-mtu", params={"mtus": values, "cluster": plan.name, "hpl_n": hpl_n,
                                                       "engine": engine, "grid": [p, q], "bytes": size},
                             hosts=[n.name for n in plan.nodes]) as run:
            with mt.mtu_changes(mt.vcluster_links(state)) as set_mtu:
                for m in values:
                    set_mtu(m)
                    with store.start_run("tcp-matrix", parent=run.id, label=f"MTU {m}", hosts=probe_nodes,
                                         params={"cluster": plan.name, "mtu": m, "bytes": size}) as pr:
                        mat = measure_matrix(state, probe_nodes, size=size, pings=200)
                        pr.update(summary={k: v for k, v in mat.items() if k != "samples"}, samples=mat["samples"])
                    row = {"mtu": m, **_pair_results(mat)}
                    if hpl_n:
                        cfg = HplConfig(ns=[hpl_n], nbs=[96], grids=[(p, q)])
                        spec = LaunchSpec([], np=ranks, hosts=hosts, hostfile=str(state.hostfile))
                        out = run_hpl(cfg, spec, store, engine=engine, launcher="vcluster", timeout=timeout,
                                      parent=run.id, label=f"MTU {m}")
                        best = out.run.summary.get("best") or {}
                        row.update(hpl_gflops=best.get("gflops"), hpl_run=out.run.id, hpl_status=out.run.status)
                    rows.append(row)
                    run.update(summary={"results": rows})
        rec = store.get(run.id)
    return {"run": rec.id, "results": rows, "engine": engine, "grid": [p, q]}
