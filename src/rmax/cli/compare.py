"""`rmax compare A B`: the before/after time trial, in the terminal and as HTML."""

from __future__ import annotations

import click
from rich.text import Text

from rmax.cli.output import console, json_option, print_json
from rmax.stats import MIN_CHANGE
from rmax.params import Number, OutputDir


def _side(runs) -> str:
    return f"{runs[0].kind} {','.join(r.id[:8] for r in runs)}"


@click.command("compare")
@click.argument("a")
@click.argument("b")
@click.option("--html", "html_dir", type=OutputDir(), default=None,
              help="Also write the comparison as an HTML page into this folder.")
@click.option("--all", "show_all", is_flag=True, help="Show every metric, not only those that changed significantly.")
@click.option("--min-change", type=Number(0, 1000, metavar="PCT"), default=100 * MIN_CHANGE, show_default=True,
              help="The smallest change (percent) called significant, however small its p-value.")
@click.option("--fail-on", "fail_on", type=click.Choice(["regression", "change"]), default=None,
              help="Exit status 1 when a significant change is found: a regression (a figure worse: a rate lower, a "
                   "time higher), or any change; for a pipeline's gate.")
@json_option
def command(a, b, html_dir, show_all, min_change, fail_on, as_json):
    """Compare two runs or two surveys (ids, prefixes or 'latest'), each metric with its change
    and whether the change is beyond the metric's run-to-run noise (p < 0.05, Holm-adjusted over the
    metrics tested, and at least --min-change). The noise comes from several runs on each side (A and
    B may each list runs, comma-separated); else from the store's history: the other stored runs of
    the same kind, options, hosts and machine, so one run a side decides once the store holds one
    more; else each run's own repeats, which can only say "no". Without any of them a metric is
    undecided, and counted so. A figure measured on a busy node (other processes' CPU use while it
    ran, stored with every run) is named.

    Each tested change also says the smallest change its noise would have let it call significant
    ("detectable"), so that a "no" says how small a change it rules out.

    Exit status 1 with --fail-on regression (or change): such a change was found.

    Example: rmax compare 3fa2c1d0 77b0e912   (one run a side; history from the store)
    rmax compare 3fa2c1d0,5e61aa02,90c1d7e4 77b0e912,1b2c3d4e,af01b2c3"""
    from rmax.compare import advice, compare, headline
    from rmax.store import open_store

    with open_store(reading=True) as store:
        ra, rb, changes, notes = compare(store, a, b, min_change / 100)
        if html_dir:
            from rmax.report.compare_page import write_compare

            path = write_compare(store, ra, rb, changes, html_dir, notes)
    busy = sorted({f"{x} {c.kind} on {c.host}: {line}" for c in changes
                   for x, line in (("A", c.busy_a), ("B", c.busy_b)) if line})
    if as_json:
        print_json({"a": [r.id for r in ra], "b": [r.id for r in rb], "min_change": min_change / 100,
                    "headline": headline(changes, ra[0].kind), "decided": sum(c.significant is not None for c in changes),
                    "significant": sum(bool(c.significant) for c in changes), "regressions": sum(c.regression for c in changes),
                    "undecided": sum(c.significant is None for c in changes), "advice": advice(changes),
                    "changes": [c.as_dict() for c in changes], "notes": notes})
    else:
        from rmax.terminal import Table

        shown = [c for c in changes if show_all or c.significant is not False]
        t = Table(title=f"{_side(ra)} -> {_side(rb)} ({headline(changes, ra[0].kind)})")
        for col in ("Kind", "Host", "Metric", "A", "B", "Change", "Noise from", "p (Holm)", "Detectable", "Significant"):
            t.add_column(col)
        for c in shown:
            sig = (Text("yes", style="bold") if c.significant else "undecided" if c.significant is None
                   else f"no (under {min_change:g}%)" if c.small else "no")
            mark = "".join(f" [{x} busy]" for x, line in (("A", c.busy_a), ("B", c.busy_b)) if line)
            t.add_row(c.kind, c.host, c.metric + mark, f"{c.a:.4g} {c.unit}", f"{c.b:.4g} {c.unit}",
                      f"{100 * c.change:+.1f}%", c.noise_from(), f"{c.p_adjusted:.3g}" if c.p_adjusted is not None else "—",
                      f"±{100 * c.detectable:.1f}%" if c.detectable is not None else "—", sig)
        console.print(t)
        console.print("A, B: each side's figure (its own statistic: `rmax runs show ID`), the median of the "
                      "figure over a side's runs when it has several; Change: B against A; Noise from: the runs a "
                      "side (pooled t-test), the store's earlier runs of the same configuration joined to A's "
                      "(pooled t-test), or one run's own repeats (a lower bound: they can only say no); p: "
                      "Holm-adjusted over every metric tested; Detectable: the smallest change its noise lets it call significant "
                      "(at Holm's strictest threshold, and at least --min-change)", soft_wrap=True, style="dim")
        hint = advice(changes)
        if hint:
            console.print(hint, soft_wrap=True)
        if not show_all and len(shown) < len(changes):
            console.print(f"{len(changes) - len(shown)} metric(s) without a significant change hidden (--all shows them)")
        for line in busy:
            console.print(f"measured on a busy node: {line}", soft_wrap=True, markup=False)
        for note in notes:
            console.print(note, soft_wrap=True, markup=False)
    if html_dir:
        if not as_json:
            console.print(f"comparison written: {path}")
    if fail_on:
        from rmax.errors import RmaxError

        hit = [c for c in changes if (c.regression if fail_on == "regression" else c.significant)]
        if hit:
            worst = sorted(hit, key=lambda c: -abs(c.change))
            raise RmaxError(f"{len(hit)} significant {'regression' if fail_on == 'regression' else 'change'}"
                            f"{'s' * (len(hit) != 1)}: " + "; ".join(f"{c.host} {c.metric} {100 * c.change:+.1f}%"
                                                                     for c in worst[:3])
                            + (f" and {len(hit) - 3} more" if len(hit) > 3 else ""), exit_code=1)
