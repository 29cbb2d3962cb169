"""`rmax scale`: measure speedup vs ranks (or nodes) and fit the generalised Amdahl model.

    rmax scale [OPTIONS] -- PROGRAM [ARGS...]     your MPI program at 1, 2, 4, ... ranks
    rmax scale [OPTIONS] hpl [--weak]             HPL at fixed N (strong) or N growing with ranks (weak)"""

from __future__ import annotations

import click
from rich.text import Text

from rmax.cli.launch_options import launch_options
from rmax.launch.request import spec_from_options
from rmax.cli.output import console, err_console, fmt, json_option, print_json
from rmax.params import Count, Label, NumberList, OutputFile
from rmax.errors import RmaxError
from rmax.launch.base import MAX_RANKS


@click.command("scale")
@click.argument("program", nargs=-1, required=True)
@click.option("--ranks", "ranks", type=NumberList(1, MAX_RANKS, integer=True), default=None, metavar="1,2,4,...",
              help="Rank (or node) counts; default 1, 2, 4, ... up to --max-ranks.")
@click.option("--max-ranks", type=Count(1, MAX_RANKS), default=None,
              help="Largest count for the default list (default: this host's slots, or the hosts given).")
@click.option("--by", type=click.Choice(["ranks", "nodes"]), default="ranks", show_default=True,
              help="Scale ranks on the hosts given, or whole nodes (the first k hosts, all their slots).")
@click.option("--repeats", type=Count(1, 1000), default=3, show_default=True, help="Runs per count.")
@click.option("--no-warmup", is_flag=True, help="Skip the untimed first run (user programs).")
@click.option("--keep-launch-time", is_flag=True,
              help="Fit the launch's whole wall time; by default an empty job launched the same way just before "
                   "each point is subtracted from it, so the launcher's start-up does not read as serial time "
                   "(unless the program prints its own 'rmax-region-seconds: X' lines: see below).")
@click.option("--weak", is_flag=True, help="hpl: weak scaling, N grows as sqrt(ranks) (memory per rank constant).")
@click.option("--n", "n", type=Count(1, 1 << 24), default=4000, show_default=True, help="hpl: N (at one rank for --weak).")
@click.option("--nb", type=Count(1, 1 << 16), default=192, show_default=True, help="hpl: block size.")
@click.option("--engine", default=None, metavar="rmax|hpcc|xhpl:PATH",
              help="hpl: engine (default rmax-hpl when built, else hpcc).")
@click.option("--max-n", type=Count(1, 1 << 24), default=None, help="Extrapolate the fitted speedup up to this count.")
@click.option("--plot", "plot_path", type=OutputFile(suffix=".svg"), default=None,
              help="Write the speedup plot to FILE, an SVG (its name ends in .svg).")
@click.option("--label", default=None, type=Label(), help="A note stored with the study.")
@launch_options(default_np="set per point")
@json_option
def command(program, ranks, max_ranks, by, repeats, no_warmup, keep_launch_time, weak, n, nb, engine, max_n,
            plot_path, label, as_json, launcher, timeout, np, **opts):
    """Run at 1, 2, 4, ... ranks with repeats, then fit Ts, Tp, Tis (linear or quadratic in N).

    Put `--` before your program so its options stay its own. Past the cores of
    this host, add --oversubscribe. A program that prints a line
    `rmax-region-seconds: X` on stdout from one rank (X: the seconds of the
    part to scale, e.g. between two barriers) is timed by it, and no empty
    launches are needed; otherwise each point's wall time minus an empty
    launch's is fitted.
    Each fitted parameter comes with its 95% interval. Examples:

      rmax scale --ranks 1,2,4 --oversubscribe -- ./my_mpi_prog --size 100

      rmax scale --n 4000 hpl            rmax scale --weak --n 2000 hpl"""
    from rmax.scale.counts import parse_counts, powers_of_two
    from rmax.scale.run import scale_command, scale_hpl
    from rmax.store import open_store

    if np is not None:
        raise RmaxError("--np does not apply: rmax scale sets the ranks of each point", hint="use --ranks")
    hpl_mode = list(program) == ["hpl"]
    if weak and not hpl_mode:
        raise RmaxError("--weak applies to `rmax scale hpl`", hint="a user program's work is its own to scale")
    base = spec_from_options([], np=1, **opts)
    if ranks:
        counts = parse_counts(",".join(map(str, ranks)))
    else:
        limit = max_ranks or (len(base.hosts) if by == "nodes" and base.hosts else base.slots)
        counts = powers_of_two(limit)
    say = None if as_json else (lambda msg: err_console.print(msg, style="dim"))
    with open_store() as store:
        if hpl_mode:
            if by == "nodes":
                raise RmaxError("`rmax scale hpl` scales ranks; give --hosts and --ranks for several nodes")
            rec = scale_hpl(base, counts, repeats, store, n=n, nb=nb, weak=weak, engine=engine or _default_engine(),
                            launcher=launcher, timeout=timeout, max_n=max_n, label=label, progress=say)
        else:
            rec = scale_command(list(program), base, counts, repeats, store, by=by, launcher=launcher,
                                timeout=timeout, warmup=not no_warmup, keep_launch=keep_launch_time, max_n=max_n,
                                label=label, progress=say)
        busy = busy_runs(store, rec)
    if plot_path:
        _plot(rec, plot_path)
    if as_json:
        print_json({**rec.as_dict(), "busy_runs": [{"run": r.id, "ranks": count, "line": line}
                                                   for count, r, line in busy]})
        return
    _print(rec, plot_path, busy)


def busy_runs(store, rec) -> list[tuple[int, object, str]]:
    """(count, run, how busy) of the study's timed runs measured on a busy node (their stored load)."""
    from rmax.inventory.load import busy_line

    out = []
    for p in rec.summary.get("points", []):
        for r in store.get_many(list(p.get("run_ids", []))):
            line = busy_line(r.load, r.hostname)
            if line:
                out.append((p["ranks"], r, line))
    return out


def _default_engine() -> str:
    from rmax.native import executable

    try:
        executable("rmax-hpl")
        return "rmax"
    except RmaxError:
        return "hpcc"


def _plot(rec, path: str) -> None:
    from rmax.model.plots import Curve, Points, speedup_svg
    from rmax.scale.analysis import curve_arrays

    s = rec.summary
    pts = [p for p in s["points"] if p["speedup"]]
    weak = s["mode"] == "weak"
    curves = []
    if s.get("fit") and s["fit"].get("chosen"):
        horizon = max(c["ranks"] for c in s["curve"])
        ns, sp = curve_arrays(s["fit"], horizon)
        curves.append(Curve(f"fitted {s['fit']['chosen']} model", ns.tolist(), sp.tolist()))
    speedup_svg(path, curves, [Points("measured (median)", [p["ranks"] for p in pts], [p["speedup"] for p in pts])],
                title="Scaled speedup (weak scaling)" if weak else "Speedup (strong scaling)",
                xlabel=rec.params.get("by", "ranks"), ylabel="speedup")


def _print(rec, plot_path, busy: list) -> None:
    from rmax.terminal import Table

    s = rec.summary
    busy_at: dict[int, int] = {}
    for count, _, _ in busy:
        busy_at[count] = busy_at.get(count, 0) + 1
    weak = s["mode"] == "weak"
    t = Table(title=f"Scaling study {rec.id[:8]} ({s['mode']} scaling, {rec.params['mode']})")
    cols = ["count", *(["N"] if rec.params["mode"].startswith("hpl") else []), "runs", "median time (s)",
            "min-max (s)", *(["median GFLOPS"] if rec.params["mode"].startswith("hpl") else []),
            "scaled speedup" if weak else "speedup", "efficiency", "Karp-Flatt e", "busy"]
    for c in cols:
        t.add_column(c, justify="right")
    for p in s["points"]:
        ts = p["time_s"]
        row = [str(p["ranks"]), *([str(p["n"])] if rec.params["mode"].startswith("hpl") else []), str(p["runs"]),
               fmt(ts["median"], ".4g"), f"{fmt(ts['min'], '.4g')}-{fmt(ts['max'], '.4g')}",
               *([fmt(p["gflops"]["median"] if p["gflops"] else None, ".2f")] if rec.params["mode"].startswith("hpl") else []),
               fmt(p["speedup"], ".3f"), fmt(p["efficiency"], ".1%"), fmt(p["karp_flatt"], ".3f"),
               f"{busy_at[p['ranks']]} of {p['runs']}" if p["ranks"] in busy_at else "no"]
        t.add_row(*row)
    console.print(t)
    if busy:   # the times of these runs are not the program's alone: said before any fit is read
        count, r, line = busy[0]
        were = "was" if len(busy) == 1 else "were"
        console.print(Text.assemble(("warning:", "yellow"), f" {len(busy)} of the study's runs {were} measured on a "
                                    f"busy node (column busy), e.g. at {count}: run {r.id[:8]}: {line}; their times "
                                    "are not the program's alone"))
    used = sum(len(p.get("run_ids", [])) for p in s["points"])
    if used:
        console.print(f"computed from {used} stored run(s) of study {rec.id[:8]} (their ids: --json, points[].run_ids)")
    if s.get("time_statistic"):
        console.print(f"time: {s['time_statistic']}")
    over = s.get("launch_overhead_s")
    if over:
        used = "subtracted from the point launched after each" if "empty job" in s.get("time_statistic", "") \
            else "not subtracted"
        console.print(f"empty launch (s, median and min-max; {used}): " +
                      ", ".join(f"{k}: {v['median']:.3g} ({v['min']:.3g}-{v['max']:.3g})" for k, v in over.items()))
    if s.get("warning"):
        console.print(Text.assemble(("warning:", "yellow"), f" {s['warning']}"))
    console.print(f"speedup: {s['points'][0]['speedup_statistic']}; Karp-Flatt e = (1/S - 1/p) / (1 - 1/p)")
    fit = s.get("fit")
    if not fit:
        console.print(s.get("fit_note", ""))
        return
    for form, why in fit["skipped"].items():
        console.print(f"{form} form not fitted: {why}")
    if not fit["chosen"]:
        console.print(fit["reason"])
        return
    f = Table(title="Generalised Amdahl fits, T(N) = Ts + g(N) Tis + Tp/N (Ts includes Tip)")
    for c in ("form", "Ts (s)", "Tp (s)", "Tis (s)", "R^2", "chi2/dof", "AICc", "best N"):
        f.add_column(c, justify="right")
    for x in fit["fits"]:
        p = x["params"]

        def pm(k):
            if k not in p:
                return "—"
            ci = x["interval"].get(k)
            return f"{p[k]:.3g} [{ci[0]:.3g}, {ci[1]:.3g}]" if ci else f"{p[k]:.3g} [interval unknown]"

        best = x["best"]
        bn = ((f"{best['n_continuous']:.3g}" + (f" ± {x['best_n_stderr']:.1g}" if x["best_n_stderr"] else ""))
              if best and best["n_continuous"] else "no peak")
        mark = "*" if x["form"] == fit["chosen"] else ""
        f.add_row(x["form"] + mark, pm("ts"), pm("tp"), pm("tis"), fmt(x["r2"], ".4f"), fmt(x["chi2_red"], ".3g"),
                  fmt(x["aicc"], ".4g"), bn)
    console.print(f)
    chosen = next(x for x in fit["fits"] if x["form"] == fit["chosen"])
    console.print(f"chosen (*): {fit['chosen']}, {fit['reason']}")
    console.print("[a, b]: 95% interval, t x the standard error at the degrees of freedom of the repeats' scatter "
                  f"(rmax.model.amdahl_fit); weights: {chosen['sigma_source']}")
    console.print(f"best count: {chosen['best']['note']}")
    if chosen.get("saturated"):
        console.print(f"{chosen['form']} has as many parameters as rank counts were measured: the curve goes through "
                      "each count's mean, so its fit is no test of the form (R^2 and chi2/dof not shown) and what it "
                      "predicts beyond them is untested; measure more rank counts")
    beyond = [c for c in s.get("curve", []) if not c["measured"]]
    if beyond:
        console.print(("untested (see above) " if chosen.get("saturated") else "")
                      + "predicted speedup beyond the measured range: "
                      + ", ".join(f"{c['ranks']}: {c['speedup']:.3g}" for c in beyond))
    if plot_path:
        console.print(f"plot written to {plot_path}")
