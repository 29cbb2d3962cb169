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
from rmax.errors import RmaxError


@click.group("model")
def command():
    """Speedup curves and HPL performance predictions from models."""


# Times of the Amdahl family, seconds (several values draw several curves).
TIMES = NumberList(0, 1e12)


def table_points(max_n: int, extra=()) -> list[int]:
    """Rows of the speedup table: powers of two up to max_n, max_n itself, and any extra N (best N)."""
    pts = {1, max_n, *(e for e in extra if e and 1 <= e <= max_n)}
    k = 2
    while k < max_n:
        pts.add(k)
        k *= 2
    return sorted(pts)


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
    from rmax.model.amdahl import AmdahlParams, best_n, speedup

    form = "quadratic" if quadratic else ("linear" if any(tis) else "amdahl")
    curves = [AmdahlParams(a, b, c, d, form) for a in ts for b in tp for c in tis for d in tip]
    bests = [best_n(c.ts, c.tp, c.tis, c.tip, c.form, max_n=max_n) for c in curves]
    rows = table_points(max_n, [b.n for b in bests])
    data = [{"params": c.as_dict(), "best": b.as_dict(),
             "points": [{"n": n, "speedup": float(speedup(n, c.ts, c.tp, c.tis, c.tip, c.form))} for n in rows]}
            for c, b in zip(curves, bests)]
    if plot_path:
        import numpy as np

        from rmax.model.plots import Curve, speedup_svg

        ns = np.arange(1, max_n + 1)
        speedup_svg(plot_path, [Curve(_label(c), ns.tolist(), speedup(ns, c.ts, c.tp, c.tis, c.tip, c.form).tolist())
                                for c in curves],
                    title=f"Generalised Amdahl speedup, Tis x {'N^2' if quadratic else 'N'}")
    if as_json:
        print_json({"model": "S(N) = (Ts + Tp) / (Ts + g(N) Tis + Tp/N + Tip)", "form": form, "curves": data,
                    "plot": plot_path})
        return
    from rmax.terminal import Table

    t = Table(title=f"Speedup S(N), Tis {'x N^2' if quadratic else 'x N'} (Brown, eq. 3)")
    t.add_column("N", justify="right")
    for c in curves:
        t.add_column(_label(c), justify="right")
    for i, n in enumerate(rows):
        t.add_row(str(n), *[fmt(d["points"][i]["speedup"], ".3f") for d in data])
    console.print(t)
    for c, b in zip(curves, bests):
        where = f"best N = {b.n} (S = {b.speedup:.3f})" if b.n else "no best N"
        console.print(f"{_label(c)}: {where}; {b.note}")
    if plot_path:
        console.print(f"plot written to {plot_path}")


def _label(c) -> str:
    return f"Ts={c.ts:g} Tp={c.tp:g} Tis={c.tis:g} Tip={c.tip:g}"


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
    from rmax.model import hpl_model as hm
    from rmax.model.inputs import hpl_observations, node_facts, resolve_overhead, resolve_rates
    from rmax.model.provenance import Scope
    from rmax.store import open_store

    given = given_overhead(kappa, tau)
    pq = hm.parse_grid(grid) if grid else None

    try:  # memory, cores and Rpeak: optional when given on the command line
        facts = node_facts()
    except RmaxError:
        facts = None
    rpn = ranks_per_node or (facts.cores if facts else None)
    if rpn is None:
        raise RmaxError("ranks per node unknown", hint="give --ranks-per-node")
    slots = nodes * rpn
    p, q = pq or hm.square_grid(slots)
    if p * q > slots:
        raise RmaxError(f"grid {p}x{q} needs {p * q} processes, but {nodes} node(s) x {rpn} ranks give {slots}")
    mem = memory_per_node * 2 ** 30 if memory_per_node else (facts.memory_bytes if facts else None)
    if ns is None:
        if mem is None:
            raise RmaxError("memory per node unknown", hint="give --n or --memory-per-node")
        ns = [hm.n_for_memory(nodes * mem, nb, p, q)]

    scope = Scope.here(nodes)
    store = open_store(reading=True) if None in (alpha, beta, gamma) or (given is None and not no_calibration) or validate else None
    try:
        # one DGEMM rate for every N: the shape of the largest (m and n are capped, so they mostly agree)
        rates = resolve_rates(store, alpha, beta, gamma, nb, scope, n=max(ns), grid=(p, q))
        a, b, g = rates["alpha"].value, rates["beta"].value, rates["gamma3"].value
        hm.check_inputs(1, nb, p, q, a, b, g)
        # read once: calibration and --validate
        obs = hpl_observations(store, a, b, g, scope=scope) if store is not None else []
        over, over_note, cal = resolve_overhead(store, given, no_calibration, a, b, g, obs, scope)
    finally:
        if store is not None:
            store.close()

    rpeak = facts.rpeak_gflops * nodes * min(1.0, p * q / slots) if facts and facts.rpeak_gflops else None
    # every doubt about an input is the prediction's: said first, where the prediction is read
    warnings = list(dict.fromkeys([w for m in rates.values() for w in m.warnings] + list(cal.warnings if cal else [])))
    ranges, unbounded = _input_ranges(rates, over, cal)
    preds, above_peak = [], False
    for n in ns:
        terms = hm.hpl_terms(n, nb, p, q, a, b, g, over)
        ref = hm.hpl_terms(n, nb, p, q, a, b, g)
        gf = hm.predicted_gflops(n, terms.total_s)
        lo, hi = hm.time_interval(n, nb, p, q, *ranges[:3], over.form, ranges[3])
        if cal is not None:   # and the model's own misfit on the tests it was calibrated on
            lo, hi = lo * max(0.0, 1 - cal.rms_rel_error), hi * (1 + cal.rms_rel_error)
        if rpeak and gf > rpeak and not above_peak:
            above_peak = True
            # a rate above the peak: the DGEMM rate or the peak is wrong, and a % above 100 would hide which
            warnings.append(f"the prediction at N={n} ({gf:.1f} GFLOPS) is above the peak used for % of Rpeak "
                            f"({rpeak:.1f} GFLOPS): gamma3 ({rates['gamma3'].source}) and that peak cannot both be "
                            "right, so no % of Rpeak is given above 100")
        preds.append({"n": n, "nb": nb, "p": p, "q": q, "terms": terms.as_dict(), "time_s": terms.total_s,
                      "time_interval_s": [lo, hi], "gflops": gf,
                      "gflops_interval": [hm.predicted_gflops(n, hi), hm.predicted_gflops(n, lo) if lo > 0 else None],
                      "efficiency": hm.efficiency(terms),
                      "reference_time_s": ref.total_s, "reference_gflops": hm.predicted_gflops(n, ref.total_s),
                      "percent_of_rpeak": 100 * gf / rpeak if rpeak and gf <= rpeak else None,
                      "memory_fraction": 8.0 * n * n / (nodes * mem) if mem else None})
    checks = None
    if validate:
        from rmax.model.hpl_validate import summarize_errors, validate as run_validation

        checks = run_validation([o for o, _ in obs])
    result = {"nodes": nodes, "ranks_per_node": rpn, "grid": [p, q], "scope": scope.describe(),
              "inputs": {k2: v.as_dict() for k2, v in rates.items()},
              "overhead": {**over.as_dict(), "source": over_note, **({"calibration": cal.as_dict()} if cal else {})},
              "rpeak_gflops": rpeak, "rpeak_source": (f"{nodes} node(s) x {facts.rpeak_gflops:.4g} GFLOPS"
                                                      f"{' x the share of cores used' if p * q < slots else ''}; "
                                                      f"per node: {facts.rpeak_basis}") if rpeak else
              "unknown: no peakflops run stored on this node and no nominal Rpeak (`rmax bench peakflops` measures it)",
              "predictions": preds, "warnings": warnings,
              "interval": {"meaning": INTERVAL_MEANING, "not_included": unbounded},
              **({"validation": {"checks": [c.as_dict() for c in checks],
                                 "summary": [summarize_errors(checks), summarize_errors(checks, 4000)]}}
                 if checks is not None else {})}
    if as_json:
        print_json(result)
        return
    _print_hpl(result, checks)


INTERVAL_MEANING = ("every input at the end of its range that makes the run fastest, then slowest (alpha and beta: "
                    "their Hockney fit's 95% intervals; gamma3: its DGEMM point's slowest and fastest blocks; the "
                    "overhead coefficient: its 95% interval), widened by the calibrated model's rms error on the "
                    "tests it was fitted to")


def _input_ranges(rates: dict, over, cal) -> tuple[list[tuple[float, float]], list[str]]:
    """alpha's, beta's, gamma3's and the overhead coefficient's ranges for the prediction's interval, and
    what has no range known (taken at its value, so the interval is too narrow by it)."""
    from rmax.model.hpl_model import OVERHEADS

    ranges, unbounded = [], []
    for k in ("alpha", "beta", "gamma3"):
        m = rates[k]
        ranges.append(m.interval or (m.value, m.value))
        if m.interval is None and not m.exact:
            unbounded.append(f"{k}: no spread measured ({m.source})")
    sym = OVERHEADS[over.form].symbol
    if cal is None:
        ranges.append((over.value, over.value))
        unbounded.append("the model's own error: it was not calibrated on stored HPL tests here")
    else:
        ranges.append(cal.interval() or (over.value, over.value))
        if cal.interval() is None:
            unbounded.append(f"{sym}'s uncertainty: calibrated on {cal.points} HPL test(s)")
        if cal.points < 3:   # one coefficient through 1 or 2 tests fits them (nearly) exactly
            unbounded.append(f"the model's own error: {cal.points} HPL test(s) are too few to measure it")
    return ranges, unbounded


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
