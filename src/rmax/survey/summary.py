"""The survey's closing summary panel in the terminal."""

from __future__ import annotations

from rich.panel import Panel
from rmax.terminal import Table
from rich.text import Text

from rmax.store import open_store
from rmax.store.runs import RunRecord
from rmax.survey.headline import headline, percent_of_peak, shown_metric
from rmax.survey.limits import busy_runs, busy_warning, lead, what_limits
from rmax.survey.spread import RULE
from rmax.survey.workflow import lost_line, missing_steps, partial_line


def render_inventory(rec: RunRecord, console) -> None:
    """The nodes in a line for each set of alike nodes (one fingerprint), naming them, so that
    hundreds of identical nodes print one line and the summary fits a screen; the whole inventory
    (caches, interfaces, BLAS alternatives, the peak's derivation) is `rmax runs show` of its run,
    and the report's."""
    from rmax.hostlist import compress
    from rmax.inventory.render import node_line

    with open_store() as store:
        infos = [r for r in store.children(rec.id) if r.kind == "info" and r.status == "ok"]
    alike: dict[str, list[RunRecord]] = {}
    for r in infos:
        alike.setdefault(r.fingerprint or r.id, []).append(r)
    for group in alike.values():
        hosts = [h for r in group for h in r.hosts] or [group[0].summary.get("hostname")]
        who = f"{compress(hosts)} ({len(hosts)} nodes alike)" if len(hosts) > 1 else hosts[0]
        console.print(f"{who}: {node_line(group[0].summary)}; inventory: rmax runs show {group[0].id[:8]}",
                      soft_wrap=True, highlight=False, markup=False)


FOLD_HOSTS = 4   # a metric measured on more nodes than this is one row in the terminal (the report has them all)


def folded(rows: list[dict]) -> list[dict]:
    """The rows as the terminal shows them: a metric measured on more than FOLD_HOSTS nodes as one
    row, the median node's value, with the slowest and fastest named, so that a survey of hundreds
    of nodes prints a summary that fits a screen. A node counts once in a row: its first figure of
    that metric and role (a node's inventory and its peakflops step may both give its peak)."""
    groups: dict[tuple, dict] = {}
    for r in rows:
        groups.setdefault((r["metric"], r.get("role")), {}).setdefault(r.get("host"), r)
    out, done = [], set()
    for r in rows:
        key = (r["metric"], r.get("role"))
        group = list(groups[key].values())
        if len(group) <= FOLD_HOSTS:
            out.append(r)
            continue
        if key in done:
            continue
        done.add(key)
        by = sorted(group, key=lambda g: g["value"])
        lo, mid, hi = by[0], by[len(by) // 2], by[-1]
        out.append({**mid, "shown": f"{r['metric']} (median of {len(by)} nodes)",
                    "statistic": f"{mid['statistic']}; lowest {lo['value']:.4g} on {lo.get('host')}, highest "
                                 f"{hi['value']:.4g} on {hi.get('host')}"})
    return out


def render_summary(rec: RunRecord, console) -> None:
    """The survey's summary: the nodes lost and the steps missing first, then the nodes, the
    headline figures and what limits the cluster."""
    with open_store() as store:
        runs = store.children(rec.id)
    rows = headline(runs)
    pct = percent_of_peak(rows)
    if pct:
        rows.append(pct)
    t = Table(show_header=True, box=None)
    for col in ("Metric", "Value", "Unit", "Statistic"):
        t.add_column(col, justify="right" if col == "Value" else "left")
    for r in folded(rows):
        t.add_row(r.get("shown") or shown_metric(r, rows), f"{r['value']:.4g}", r["unit"], r["statistic"])
    steps = rec.summary.get("steps", [])
    if rec.summary.get("lost"):   # first of all: the nodes this survey went on without
        console.print(lost_line(rec.summary["lost"]), style="bold red")
    if missing_steps(steps):
        console.print(partial_line(steps), style="bold yellow")   # then what this survey lacks
    render_inventory(rec, console)   # then the nodes it measured
    busy = busy_runs(runs)
    if busy:   # as the report says it, the first few named
        console.print(busy_warning(busy, len(runs), most=5), style="bold yellow")
    counts = {st: sum(s["status"] == st for s in steps) for st in ("ok", "skipped")}
    others = len(steps) - counts["ok"] - counts["skipped"]
    ranks = rec.summary.get("ranks")
    title = (f"survey {rec.id[:8]}: {len(rec.summary.get('nodes', []))} node(s), "
             + (f"{ranks} ranks; " if ranks else "ranks not recorded; ") +
             f"steps {counts['ok']} ok, {counts['skipped']} skipped" + (f", {others} not ok" if others else "")
             + f"; {rec.status}")
    limits = what_limits(rows, runs, {r.id for r, _ in busy})
    answer = lead(rows, limits)
    if answer:
        console.print(answer, style="bold")
    console.print(title)    # its own line: a panel's title is cut to the panel's width
    console.print(Panel(t, expand=False))
    if limits:
        console.print("What limits this cluster:")
        for line in limits:
            console.print(f"  {line}")
    from rmax.topology.inference_run import answer_line

    for r in runs:
        if r.kind == "topology" and r.status == "ok":
            console.print(f"Switches: {answer_line(r.summary)} (topology run {r.id[:8]})", soft_wrap=True,
                          highlight=False, markup=False)
    spread = rec.summary.get("spread") or {}
    shared = next((v["rule"] for v in spread.values() if v["rule"] != RULE), None)   # nodes on one machine
    if shared:
        console.print(f"slow nodes {shared}")
    slow = {k: v["slow"] for k, v in spread.items() if v["slow"]}
    for metric, nodes in slow.items():
        console.print(Text.assemble(("slow node(s)", "yellow"),
                                    f" for {metric}: {', '.join(nodes)} (more than 10% worse than the median node, and an "
                                    "outlier among the nodes)"))
