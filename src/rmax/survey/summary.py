"""The survey's closing summary panel in the terminal."""

from __future__ import annotations

from rich.panel import Panel
from rmax.terminal import Table
from rich.text import Text

from rmax.store import open_store
from rmax.store.runs import RunRecord
from rmax.survey.headline import headline, peak_beaten, percent_of_peak, shown_metric
from rmax.survey.workflow import partial_line


def render_inventory(rec: RunRecord, console) -> None:
    """Each node's inventory, as `rmax info` shows it."""
    from rmax.inventory.render import render

    with open_store() as store:
        infos = [r for r in store.children(rec.id) if r.kind == "info" and r.status == "ok"]
    for r in infos:
        console.print(render(r.summary))


def render_summary(rec: RunRecord, console) -> None:
    with open_store() as store:
        runs = store.children(rec.id)
    rows = headline(runs)
    pct = percent_of_peak(rows)
    if pct:
        rows.append(pct)
    t = Table(show_header=True, box=None)
    for col in ("Metric", "Value", "Unit", "Statistic"):
        t.add_column(col, justify="right" if col == "Value" else "left")
    for r in rows:
        t.add_row(shown_metric(r, rows), f"{r['value']:.4g}", r["unit"], r["statistic"])
    steps = rec.summary.get("steps", [])
    if rec.status == "partial":
        console.print(partial_line(steps), style="bold yellow")   # first: what this survey lacks
    counts = {st: sum(s["status"] == st for s in steps) for st in ("ok", "skipped")}
    others = len(steps) - counts["ok"] - counts["skipped"]
    ranks = rec.summary.get("ranks")
    title = (f"survey {rec.id[:8]}: {len(rec.summary.get('nodes', []))} node(s), "
             + (f"{ranks} ranks; " if ranks else "ranks not recorded; ") +
             f"steps {counts['ok']} ok, {counts['skipped']} skipped" + (f", {others} not ok" if others else "")
             + f"; {rec.status}")
    console.print(title)    # its own line: a panel's title is cut to the panel's width
    console.print(Panel(t, expand=False))
    beaten = peak_beaten(rows)
    if beaten:
        console.print(beaten, style="yellow")
    slow = {k: v["slow"] for k, v in (rec.summary.get("spread") or {}).items() if v["slow"]}
    for metric, nodes in slow.items():
        console.print(Text.assemble(("slow node(s)", "yellow"),
                                    f" for {metric}: {', '.join(nodes)} (more than 10% worse than the median node, and an "
                                    "outlier among the nodes)"))
