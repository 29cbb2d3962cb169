"""`rmax model`: predictions from models, no measurement.

    rmax model speedup   the generalised Amdahl curves (Brown, "Maximizing Beowulf Performance",
                         figures 1-3) as a table and an SVG
    rmax model hpl       predicted HPL time, GFLOPS and efficiency from the scalability model"""

from __future__ import annotations

import click
from rich.text import Text

from rmax.cli.output import console, fmt, json_option, print_json
from rmax.cli.overhead_options import given_overhead, overhead_options
from rmax.params import Count, Number, NumberList, OutputFile


@click.group("model")
def command():
    """Speedup curves and HPL performance predictions from models."""


# Times of the Amdahl family, seconds (several values draw several curves).
TIMES = NumberList(0, 1e12)


@command.command("speedup")
@click.option("--ts", required=True, type=TIMES, help="Serial time Ts (seconds; a,b,... for several curves).")
@click.option("--tp", required=True, type=TIMES, help="Parallelisable time Tp (a,b,... for several curves).")
@click.option("--tis", default="0", show_default=True, type=TIMES,
              help="Serial overhead per processor Tis (a,b,...).")
@click.option("--tip", default="0", show_default=True, type=TIMES, help="Parallel overhead per processor Tip.")
@click.option("--quadratic", is_flag=True, help="Tis grows as N^2 (Brown's figure 3) instead of N.")
@click.option("--max-n", type=Count(1, 1 << 24), default=128, show_default=True, help="Largest processor count.")
@click.option("--plot", "plot_path", type=OutputFile(), default=None, help="Write the curves to FILE.svg.")
@json_option
def speedup_cmd(ts, tp, tis, tip, quadratic, max_n, plot_path, as_json):
    """Speedup S(N) = (Ts + Tp) / (Ts + g(N) Tis + Tp/N + Tip), g(N) = N or N^2 (Brown,
    "Maximizing Beowulf Performance", eq. 3).

    Brown's figures: --ts 10 --tp 10,100,1000,10000,100000 --tip 1 with --tis 0 (figure 1),
    --tis 10 (figure 2) and --tis 10 --quadratic (figure 3)."""
    from rmax.model.speedup_table import label, speedup_table, write_plot

    tb = speedup_table(ts, tp, tis, tip, quadratic, max_n)
    if plot_path:
        write_plot(plot_path, tb, max_n)
    if as_json:
        print_json({"model": "S(N) = (Ts + Tp) / (Ts + g(N) Tis + Tp/N + Tip)", "form": tb.form, "curves": tb.data,
                    "plot": plot_path})
        return
    from rmax.terminal import Table

    t = Table(title=f"Speedup S(N), Tis {'x N^2' if quadratic else 'x N'} (Brown, eq. 3)")
    t.add_column("N", justify="right")
    for c in tb.curves:
        t.add_column(label(c), justify="right")
    for i, n in enumerate(tb.rows):
        t.add_row(str(n), *[fmt(d["points"][i]["speedup"], ".3f") for d in tb.data])
    console.print(t)
    for c, b in zip(tb.curves, tb.bests):
        where = f"best N = {b.n} (S = {b.speedup:.3f})" if b.n else "no best N"
        console.print(f"{label(c)}: {where}; {b.note}")
    if plot_path:
        console.print(f"plot written to {plot_path}")


@command.command("hpl")
@click.option("--nodes", type=Count(1, 1 << 20), default=1, show_default=True, help="Number of nodes.")
@click.option("--ranks-per-node", type=Count(1, 1 << 16), default=None, help="MPI ranks per node (default: the node's cores).")
@click.option("--grid", default=None, metavar="PxQ", help="Process grid (default: the most square with P <= Q).")
@click.option("--nb", type=Count(1, 1 << 16), default=192, show_default=True, help="Block size NB.")
@click.option("--n", "ns", type=NumberList(1, 1 << 24, integer=True, most=100), default=None, metavar="N[,N...]",
              help="Problem size(s) (default: the largest fitting in 80% of the nodes' memory).")
@click.option("--memory-per-node", type=Number(0, 1 << 30, lo_open=True), default=None, metavar="GIB",
              help="Memory per node in GiB (default: this node's, from the inventory).")
@click.option("--alpha", type=Number(0, 1e6), default=None, help="Message latency, seconds (default: latest net run).")
@click.option("--beta", type=Number(0, 1e18, lo_open=True), default=None, help="Bandwidth, bytes/s (default: latest net run).")
@click.option("--gamma", type=Number(0, 1e6, lo_open=True), default=None,
              help="Seconds per DGEMM flop of one process (default: latest dgemm run).")
@overhead_options
@click.option("--no-calibration", is_flag=True, help="The reference's model alone (no overhead term).")
@click.option("--validate", is_flag=True, help="Also predict every stored HPL test and show the errors.")
@json_option
def hpl_cmd(nodes, ranks_per_node, grid, nb, ns, memory_per_node, alpha, beta, gamma, kappa, tau,
            no_calibration, validate, as_json):
    """Predicted HPL time, GFLOPS and efficiency from HPL's scalability model.

    Example: rmax model hpl --nodes 4 --grid 2x4 --nb 192 --alpha 25e-6 --beta 117e6 --gamma 1e-11"""
    from rmax.model.hpl_prediction import predict

    result, checks = predict(nodes, ranks_per_node, grid, nb, ns, memory_per_node, alpha, beta, gamma,
                             given_overhead(kappa, tau), no_calibration, validate)
    if as_json:
        print_json(result)
        return
    _print_hpl(result, checks)


def _print_hpl(r: dict, checks) -> None:
    from rmax.terminal import Table

    inp = r["inputs"]
    console.print(f"alpha  = {inp['alpha']['value'] * 1e6:.3f} us per message   ({inp['alpha']['source']})")
    console.print(f"beta   = {inp['beta']['value'] / 1e6:.1f} MB/s                 ({inp['beta']['source']})")
    console.print(f"gamma3 = {inp['gamma3']['value']:.4g} s/flop = {1e-9 / inp['gamma3']['value']:.2f} GFLOPS "
                  f"per process   ({inp['gamma3']['source']})")
    o = r["overhead"]
    console.print(f"{o['symbol']:<6} = {o['value']:.3g} {o['unit']}   (overhead term '{o['form']}': {o['source']})")
    console.print(f"measurements used: those of {r['scope']}", style="dim")
    p, q = r["grid"]
    t = Table(title=f"Predicted HPL, {r['nodes']} node(s) x {r['ranks_per_node']} ranks, grid {p} x {q}")
    for col in ("N", "NB", "time (s)", "interval (s)", "GFLOPS", "efficiency", "% of Rpeak", "memory used"):
        t.add_column(col, justify="right")
    for x in r["predictions"]:
        lo, hi = x["time_interval_s"]
        t.add_row(str(x["n"]), str(x["nb"]), fmt(x["time_s"], ".4g"), f"{fmt(lo, '.4g')}-{fmt(hi, '.4g')}",
                  fmt(x["gflops"], ".1f"), fmt(x["efficiency"], ".1%"), fmt(x["percent_of_rpeak"], ".1f"),
                  fmt(x["memory_fraction"], ".0%"))
    console.print(t)
    console.print(f"interval: {r['interval']['meaning']}", style="dim")
    for miss in r["interval"]["not_included"]:
        console.print(f"not in the interval: {miss}", style="dim")
    console.print(f"% of Rpeak against {r['rpeak_gflops']:.4g} GFLOPS: {r['rpeak_source']}" if r["rpeak_gflops"]
                  else f"% of Rpeak {r['rpeak_source']}", style="dim")
    for w in r["warnings"]:
        console.print(Text.assemble(("warning:", "yellow"), f" {w}"))
    t = Table(title="The predicted time's terms (s)")
    for col in ("N", "DGEMM", "bandwidth", "latency", f"overhead ({o['form']})"):
        t.add_column(col, justify="right")
    for x in r["predictions"]:
        tm = x["terms"]
        t.add_row(str(x["n"]), fmt(tm["compute_s"], ".4g"), fmt(tm["bandwidth_s"], ".4g"), fmt(tm["latency_s"], ".4g"),
                  fmt(tm["overhead_s"], ".4g"))
    console.print(t)
    console.print("efficiency: the DGEMM term's share of the predicted time (1 = every flop at DGEMM speed)")
    if checks is None:
        return
    if not checks:
        console.print("validation: no stored ok HPL tests to compare with")
        return
    v = Table(title="Stored HPL tests vs the model")
    for col in ("N", "measured s", "GFLOPS", "DGEMM/proc", "reference s", "error", "calibrated s", "error"):
        v.add_column(col, justify="right")
    for c in sorted(checks, key=lambda c: c.n):
        v.add_row(f"{c.n}", fmt(c.measured_s, ".3g"), fmt(c.measured_gflops, ".1f"),
                  fmt(1e-9 / c.gamma3, ".1f"), fmt(c.predicted_s, ".3g"), fmt(c.error, "+.1%"),
                  fmt(c.calibrated_s, ".3g"), fmt(c.calibrated_error, "+.1%"))
    console.print(v)
    console.print("error = (predicted - measured) / measured time; calibrated: the overhead term fitted on the other tests; "
                  "DGEMM/proc: the GFLOPS per process the test is modelled with")
    for s in r["validation"]["summary"]:
        ref, cal = s["reference"], s["calibrated"]
        console.print(f"N >= {s['min_n']}: {ref['n']} test(s); mean |error| reference {fmt(ref['mean_abs'], '.1%')}"
                      f" (max {fmt(ref['max_abs'], '.1%')}), calibrated leave-one-out "
                      f"{fmt(cal['mean_abs'], '.1%')} (max {fmt(cal['max_abs'], '.1%')})")
