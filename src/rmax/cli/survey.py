"""`rmax survey`: inventory, node and network benchmarks and HPL, stored as one survey."""

from __future__ import annotations

import click
from rich.text import Text

from rmax.cli.output import console, err_console, json_option, print_json
from rmax.params import HOSTFILE, HOSTS, TIMEOUT, Duration, Label, OutputDir, Seconds
from rmax.errors import RmaxError, unfinished
from rmax.launch import REGISTRY
from rmax.cli.launch_options import use_vcluster
from rmax.launch.allocation import allocation_hosts
from rmax.launch.request import resolve_hosts
from rmax.cli.launch_options import lost_after_option, mpi_option


def drain_lost(lost: list[dict], survey: str, really: bool) -> None:
    """Each lost node's drain under Slurm: done with --drain, else the line to do it printed."""
    from rmax.launch.drain import drain, reason_text, shown

    for x in lost:
        why = reason_text(f"lost in survey {survey[:8]} step {x['step']}: {x['why']}", "rmax survey")
        err_console.print(Text(f"  {x['host']}: {drain(x['host'], why)}" if really else f"  to drain it: {shown(x['host'], why)}"),
                          soft_wrap=True)


@click.command("survey")
@click.option("--hosts", type=HOSTS, default=None, help="Nodes and their slots (default: this node).")
@click.option("--hostfile", type=HOSTFILE, default=None, help="Hostfile ('host slots=N' lines).")
@click.option("--quick", is_flag=True, help="About one minute on one node instead of about five (the per-node steps "
              "run on every node at once).")
@click.option("--budget", type=Seconds(10, 30 * 86400, lo_open=False), default=None,
              help="Seconds the survey aims at: the plan printed before it measures gives each step its share "
              "(per-node steps a fixed time on every node at once, whatever the node count) and sizes it to fit; a "
              "step is stopped past its share (with a margin), keeping what it measured (partial). No planned step "
              "is dropped for time. Default: 60 s with --quick, else 300 s; on several nodes the network steps get "
              "240 s (900 s) more.")
@click.option("--tune", "tune", type=Duration(), default=None,
              help="Tune HPL for this long (e.g. 20m) instead of one HPL run; the best HPL.dat is written to --out.")
@click.option("--steps", default=None, metavar="A,B,...", help="Only these steps (see --list-steps).")
@click.option("--list-steps", is_flag=True, help="List the steps and exit.")
@click.option("--launcher", type=click.Choice(sorted(REGISTRY)), default=None)
@click.option("--vcluster", metavar="NAME", default=None, callback=use_vcluster,
              help="Survey the nodes of this virtual cluster (its hostfile, through --launcher vcluster).")
@click.option("--timeout", type=TIMEOUT, default=900.0, show_default=True, help="Watchdog per step job (s).")
@click.option("--label", default=None, type=Label(), help="A note stored with the survey.")
@click.option("--require-all-nodes", is_flag=True,
              help="A node lost or unreachable fails the survey (exit 1); by default the survey goes on without it "
              "and ends partial (exit 3), naming it.")
@click.option("--drain", is_flag=True,
              help="Under Slurm, drain each lost node (scontrol update ... State=DRAIN) with the survey's reason; "
              "without it the command to do so is printed.")
@click.option("--busy-ok", is_flag=True,
              help="Exit 0, not 4, when every step ran but figures were measured on a busy node (the summary "
              "names them either way).")
@lost_after_option
@mpi_option
@click.option("--out", type=OutputDir(), default=None, help="Also write the HTML report here.")
@json_option
def command(hosts, hostfile, quick, budget, tune, steps, list_steps, launcher, vcluster, timeout, label,
            require_all_nodes, drain, busy_ok, out, as_json):
    """Characterise this node (or the nodes given): inventory, node benchmarks, network benchmarks
    when there are several nodes, and HPL at a sensible N; all stored as one survey.

    Exit status 3: the survey is partial (a planned step did not run or finish, or a node was lost:
    the summary names it first). Exit status 4: every step ran, but figures were measured on a busy
    node (the summary names the runs; --busy-ok: 0). A node that does not answer a launch, or whose heartbeat stops in
    a step and then does not answer, is named lost within about --lost-after + 10 s and left out of
    every later step, which runs on the others.

    Example: rmax survey --quick"""
    from rmax.store import open_store
    from rmax.survey.steps import all_steps, by_name
    from rmax.survey.workflow import run_survey

    if list_steps:
        for s in all_steps():
            console.print(f"{s.name:<10} {s.title}")
        return
    launcher, host_list, hostfile = resolve_hosts(hosts, hostfile, launcher, vcluster)
    chosen = by_name(steps.split(",") if steps else None)

    marks = {"ok": "green", "failed": "red", "invalid": "red", "skipped": "dim", "interrupted": "yellow",
             "partial": "yellow"}
    status = err_console.status("survey starting")

    titles = {}

    def on_step(name, event, info):
        if event == "plan":   # before the steps it sizes run: what this survey will measure, and for how long
            for line in info["lines"]:
                err_console.print(Text(line, style="dim"), soft_wrap=True)   # whole lines, never cut
            return
        if event == "lost":   # at once, not only in the summary
            err_console.print(Text.assemble(("  LOST ", "bold red"), f"{info['host']} in {info['step']} at "
                                            f"{info['at_s']:g} s: {info['why']}; the survey goes on without it"))
            return
        if event in ("start", "progress"):
            titles.setdefault(name, info.get("title", ""))
            status.update(Text(f"survey: {name} ({titles[name]})"
                               + (f" {info['text']}" if event == "progress" else "")))
            return
        detail = info.get("reason") or info.get("error") or (f"{info['seconds']:.1f} s" if "seconds" in info else "")
        if "node_seconds" in info and not info.get("reason") and not info.get("error"):
            detail = f"{info['node_seconds']:.1f} s on the slowest node ({info['seconds']:.1f} s until stored)"
        if info.get("sizing"):
            detail += f"; {info['sizing']}"
        err_console.print(Text.assemble(f"  {name:<10} ", (event, marks.get(event, "")), f"  {detail}"))

    with open_store() as store:
        with status:
            rec = run_survey(store, chosen, hosts=host_list, quick=quick, budget=budget, launcher=launcher,
                             timeout=timeout, label=label, tune_budget=tune, out_dir=out,
                             on_step=on_step, require_all=require_all_nodes)
        lost = rec.summary.get("lost") or []
        if lost and (drain or allocation_hosts()):
            drain_lost(lost, rec.id, drain)
        if out:
            from rmax.report.build import write_report

            write_report(store, rec.id, out)
    if as_json:
        print_json(rec.as_dict())
    else:
        from rmax.survey.summary import render_summary

        render_summary(rec, console)
        if out:
            console.print(f"report: {out}/index.html")
        else:
            console.print(f"report: rmax report {rec.id[:8]} --out rmax-report")
    if rec.status != "ok":
        raise unfinished("survey", rec)
    if not busy_ok:
        from rmax.survey.limits import busy_runs

        with open_store(reading=True) as store:
            runs = store.children(rec.id)
        busy = busy_runs(runs)
        if busy:
            raise RmaxError(f"survey {rec.id[:8]} ok, but {len(busy)} of {len(runs)} runs were measured on a busy "
                            "node (named above)", hint="measure again on quiet nodes, or pass --busy-ok",
                            exit_code=4)
