"""`rmax cost`: dollars per GFLOPS, MFLOPS per watt and % of peak (Table Two of the Kronos
article, Eadline and Layton),
and with --what-if, which alternative buys more HPL GFLOPS per dollar by the HPL model."""

from __future__ import annotations

import click

from rmax.cli.output import console, fmt, json_option, print_json
from rmax.cli.overhead_options import given_overhead, overhead_options
from rmax.params import Count, InputFile, Number
from rmax.errors import MissingData, RmaxError


@click.command("cost")
@click.option("--cluster", "cluster_path", default="cluster.toml", show_default=True, type=InputFile(missing_hint="write one as docs/COST.md describes, or give --cluster FILE"),
              help="The cluster's description (format: docs/COST.md).")
@click.option("--gflops", type=Number(1e-6, 1e15), default=None, help="HPL GFLOPS to use (default: the best stored ok HPL test).")
@click.option("--what-if", "what_if", is_flag=True,
              help="Compare the [[what_if]] alternatives (default: twice the nodes) by the HPL model.")
@click.option("--nb", type=Count(1, 1 << 16), default=192, show_default=True, help="What-if: HPL block size for the model.")
@click.option("--alpha", type=Number(0, 1e6), default=None, help="What-if: latency in seconds (default: cluster.toml, then measured).")
@click.option("--beta", type=Number(0, 1e18, lo_open=True), default=None, help="What-if: bandwidth in bytes/s (default: cluster.toml, then measured).")
@click.option("--gamma", type=Number(0, 1e6, lo_open=True), default=None, help="What-if: seconds per DGEMM flop per process (default: measured).")
@overhead_options
@json_option
def command(cluster_path, gflops, what_if, nb, alpha, beta, gamma, kappa, tau, as_json):
    """Cost-benefit of the cluster from cluster.toml and the latest HPL results.

    Example: rmax cost --cluster cluster.toml --what-if"""
    from rmax.model.cost import cost_figures, read_cluster
    from rmax.model.inputs import best_hpl, node_facts
    from rmax.model.provenance import Scope
    from rmax.store import open_store

    given = given_overhead(kappa, tau)
    cf = read_cluster(cluster_path)
    c = cf.cluster
    facts = None
    try:
        facts = node_facts()
    except RmaxError:
        pass
    rpeak_node = c.rpeak_gflops or (facts.rpeak_gflops if facts else None)
    scope = Scope.here(nodes=c.nodes)   # HPL and network rates count only when measured on such nodes
    with open_store(reading=True) as store:
        if gflops is not None:
            measured, source = gflops, "given (--gflops)"
        else:
            got = best_hpl(store, scope)
            if not got:
                raise MissingData(f"no HPL test stored on {scope.describe()} of this machine's kind: run `rmax hpl run` "
                                f"on the cluster's {c.nodes} node(s) first", hint="or give --gflops")
            measured, source = got
        fig = cost_figures(measured, c.price, c.watts, rpeak_node * c.nodes if rpeak_node else None)
        result = {"cluster": c.name, "nodes": c.nodes, "gflops_source": source, "table2": fig.as_dict(),
                  "rpeak_source": ("cluster.toml" if c.rpeak_gflops else
                                   f"inventory ({facts.rpeak_basis})" if rpeak_node else None)}
        if what_if:
            result["what_if"] = _what_if(cf, facts, store, nb, alpha, beta, gamma, given, scope)
    if as_json:
        print_json(result)
        return
    _print(result)


def _what_if(cf, facts, store, nb, alpha, beta, gamma, overhead, scope) -> dict:
    from dataclasses import replace

    from rmax.model import hpl_model as hm
    from rmax.model.cost import WhatIf, cost_figures
    from rmax.model.inputs import gamma3_from_store, resolve_overhead, resolve_rates

    base = cf.cluster
    alts = cf.what_if or [WhatIf("twice the nodes", replace(
        base, nodes=2 * base.nodes, network_price=2 * base.network_price, network_watts=2 * base.network_watts))]
    a0 = alpha if alpha is not None else (base.latency_us * 1e-6 if base.latency_us is not None else None)
    b0 = beta if beta is not None else (base.bandwidth_mbps * 1e6 if base.bandwidth_mbps else None)
    shapes = []
    for name, c in [("as described", base), *[(w.name, w.cluster) for w in alts]]:
        rpn = c.ranks_per_node or (facts.cores if facts else None)
        mem = c.memory_gib * 2 ** 30 if c.memory_gib else (facts.memory_bytes if facts else None)
        if not rpn or not mem:
            raise RmaxError("ranks and memory per node unknown", hint="set [nodes] ranks and memory_gib in cluster.toml")
        p, q = hm.square_grid(c.nodes * rpn)
        shapes.append((name, c, rpn, p, q, hm.n_for_memory(c.nodes * mem, nb, p, q)))
    # Each alternative's DGEMM rate at its own trailing-update shape (its N and grid), as `rmax model hpl`.
    _, _, _, p0, q0, n0 = shapes[0]
    rates = resolve_rates(store, a0, b0, gamma, nb, scope=scope, n=n0, grid=(p0, q0))
    if alpha is None and base.latency_us is not None:
        rates["alpha"] = replace(rates["alpha"], source="cluster.toml [network] latency_us")
    if beta is None and base.bandwidth_mbps:
        rates["beta"] = replace(rates["beta"], source="cluster.toml [network] bandwidth_MBps")
    a, b = rates["alpha"].value, rates["beta"].value
    over, over_note, _ = resolve_overhead(store, overhead, False, a, b, rates["gamma3"].value, scope=scope)
    rows = []
    for i, (name, c, rpn, p, q, n) in enumerate(shapes):
        g3 = rates["gamma3"] if gamma is not None or i == 0 else gamma3_from_store(store, nb, n=n, grid=(p, q))
        g = g3.value
        ca = c.latency_us * 1e-6 if c.latency_us is not None and c is not base else a
        cb = c.bandwidth_mbps * 1e6 if c.bandwidth_mbps and c is not base else b
        rpeak = c.rpeak_gflops or (facts.rpeak_gflops if facts else None)
        node_dgemm = rpn * 1e-9 / g
        if rpeak and node_dgemm > rpeak:
            # A DGEMM faster than the nodes' peak was not measured on these nodes: a prediction
            # from it would promise more than the hardware can do. From the store, the nodes' own
            # rate is what is missing (exit 1); a given --gamma is bad input.
            error = RmaxError if gamma is not None else MissingData
            raise error(f"the DGEMM rate ({node_dgemm:.1f} GFLOPS per node of {rpn} ranks, from "
                        f"{g3.source}) is above the Rpeak of '{name}' nodes ({rpeak:g} GFLOPS): "
                        f"it was not measured on them",
                        hint="run `rmax bench dgemm` on one of the cluster's nodes and pass its rate as --gamma "
                             "(seconds per flop per process), or correct rpeak_gflops")
        t = hm.predict_hpl(n, nb, p, q, ca, cb, g, over)
        gf = hm.predicted_gflops(n, t)
        fig = cost_figures(gf, c.price, c.watts, rpeak * c.nodes if rpeak else None)
        rows.append({"name": name, "nodes": c.nodes, "grid": [p, q], "n": n, "alpha_s": ca, "beta_Bps": cb,
                     "gamma3": g3.as_dict(), "predicted_time_s": t, **fig.as_dict()})
    base_row = rows[0]
    for r in rows[1:]:
        extra = r["price"] - base_row["price"]
        gain = r["gflops"] - base_row["gflops"]
        r["extra_gflops_per_1000_dollars"] = 1000 * gain / extra if extra > 0 else None
    best = min(rows, key=lambda r: r["dollars_per_gflops"])
    marg = [r for r in rows[1:] if r.get("extra_gflops_per_1000_dollars") is not None]
    best_marg = max(marg, key=lambda r: r["extra_gflops_per_1000_dollars"]) if marg else None
    return {"inputs": {k2: v.as_dict() for k2, v in rates.items()}, "overhead": {**over.as_dict(), "source": over_note},
            "nb": nb, "rows": rows, "cheapest_per_gflops": best["name"],
            "best_buy": best_marg["name"] if best_marg else None}


def _print(r: dict) -> None:
    from rmax.terminal import Table

    f = r["table2"]
    t = Table(title=f"Cost-benefit of {r['cluster']} ({r['nodes']} nodes), as Kronos's Table Two")
    t.add_column("metric")
    t.add_column("value", justify="right")
    t.add_row("HPL GFLOPS", fmt(f["gflops"], ".2f"))
    t.add_row("Rpeak GFLOPS", fmt(f["rpeak_gflops"], ".1f"))
    t.add_row("percent of peak", fmt(f["percent_of_peak"], ".1f") + ("%" if f["percent_of_peak"] else ""))
    t.add_row("cost ($)", fmt(f["price"], ",.0f"))
    t.add_row("dollars per GFLOPS", fmt(f["dollars_per_gflops"], ",.2f"))
    t.add_row("power at load (W)", fmt(f["watts"], ",.0f"))
    t.add_row("MFLOPS per watt", fmt(f["mflops_per_watt"], ",.1f"))
    console.print(t)
    console.print(f"GFLOPS: {r['gflops_source']}")
    if r["rpeak_source"]:
        console.print(f"Rpeak: {r['rpeak_source']}")
    w = r.get("what_if")
    if not w:
        return
    inp = w["inputs"]
    console.print(f"model inputs: alpha {inp['alpha']['value'] * 1e6:.3g} us ({inp['alpha']['source']}), beta "
                  f"{inp['beta']['value'] / 1e6:.4g} MB/s ({inp['beta']['source']}), DGEMM "
                  f"{1e-9 / inp['gamma3']['value']:.1f} GFLOPS per process ({inp['gamma3']['source']}), "
                  f"overhead {w['overhead']['symbol']} {w['overhead']['value']:.3g} ({w['overhead']['source']})")
    for x in w["rows"][1:]:
        if x["gamma3"]["source"] != inp["gamma3"]["source"]:
            console.print(f"DGEMM for '{x['name']}' (N {x['n']}, grid {x['grid'][0]}x{x['grid'][1]}): "
                          f"{1e-9 / x['gamma3']['value']:.1f} GFLOPS per process ({x['gamma3']['source']})")
    t = Table(title=f"What if (HPL model, N at 80% of memory, NB {w['nb']})")
    for col in ("alternative", "nodes", "cost ($)", "pred. GFLOPS", "$/GFLOPS", "MFLOPS/W", "extra GFLOPS per extra $1000"):
        t.add_column(col, justify="right")
    for x in w["rows"]:
        t.add_row(x["name"], str(x["nodes"]), fmt(x["price"], ",.0f"), fmt(x["gflops"], ".1f"),
                  fmt(x["dollars_per_gflops"], ",.2f"), fmt(x["mflops_per_watt"], ",.1f"),
                  fmt(x.get("extra_gflops_per_1000_dollars"), ".2f"))
    console.print(t)
    console.print(f"lowest dollars per GFLOPS: {w['cheapest_per_gflops']}"
                  + (f"; most extra GFLOPS per extra dollar: {w['best_buy']}" if w["best_buy"] else ""))
    console.print("the 'as described' row is the model's prediction too, so the rows compare like with like")
