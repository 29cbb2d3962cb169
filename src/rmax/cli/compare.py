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
@json_option
def command(a, b, html_dir, show_all, min_change, as_json):
    """Compare two runs or two surveys (ids, prefixes or 'latest'), each metric with its change
    and whether the change is significant (Welch's t-test over independent repeats, Holm-adjusted
    over all the metrics, p < 0.05, and at least --min-change):
    several runs on each side (A and B may each list runs, comma-separated), or each run's own
    repeats. Without them the verdict is: not enough runs to decide.

    Example: rmax compare 3fa2c1d0,5e61aa02,90c1d7e4 77b0e912,1b2c3d4e,af01b2c3"""
    from rmax.compare import VERDICT, compare
    from rmax.store import open_store

    with open_store(reading=True) as store:
        ra, rb, changes, notes = compare(store, a, b, min_change / 100)
        if html_dir:
            from rmax.report.compare_page import write_compare

            path = write_compare(store, ra, rb, changes, html_dir, notes)
    if as_json:
        print_json({"a": [r.id for r in ra], "b": [r.id for r in rb], "min_change": min_change / 100,
                    "changes": [c.as_dict() for c in changes], "notes": notes})
    else:
        from rmax.terminal import Table

        shown = [c for c in changes if show_all or c.significant is not False]
        t = Table(title=f"{_side(ra)} -> {_side(rb)} ({len(changes)} metrics paired, "
                        f"{sum(bool(c.significant) for c in changes)} significant)")
        for col in ("Kind", "Host", "Metric", "A", "B", "Change", "Repeats A/B", "p (Holm)", "Significant"):
            t.add_column(col)
        for c in shown:
            sig = (Text("yes", style="bold") if c.significant else "undecided" if c.significant is None
                   else f"no (under {min_change:g}%)" if c.small else "no")
            t.add_row(c.kind, c.host, c.metric, f"{c.a:.4g} {c.unit}", f"{c.b:.4g} {c.unit}", f"{100 * c.change:+.1f}%",
                      f"{c.n_a}/{c.n_b}", f"{c.p_adjusted:.3g}" if c.p_adjusted is not None else "—", sig)
        console.print(t)
        console.print("A, B: each side's figure (its own statistic: `rmax runs show ID`), the median of the "
                      "figure over a side's runs when it has several; Change: B against A; p: Welch's t-test "
                      "over the repeats, Holm-adjusted over every metric", soft_wrap=True, style="dim")
        undecided = sum(c.significant is None for c in changes)
        if undecided:
            console.print(f"{undecided} metric(s) undecided, {VERDICT[None]}: one run a side has no independent "
                          "repeats; compare several runs a side (A1,A2,A3 B1,B2,B3)", soft_wrap=True)
        if not show_all and len(shown) < len(changes):
            console.print(f"{len(changes) - len(shown)} metric(s) without a significant change hidden (--all shows them)")
        for note in notes:
            console.print(note, soft_wrap=True, markup=False)
    if html_dir:
        if not as_json:
            console.print(f"comparison written: {path}")
