"""`rmax accept`: a verdict per node and metric of a survey, against references and the fleet."""

from __future__ import annotations

import time

import click
from rich.text import Text

from rmax.cli.launch_options import use_vcluster
from rmax.cli.output import console, err_console, json_option, print_json
from rmax.errors import RmaxError
from rmax.launch import REGISTRY
from rmax.params import HOSTFILE, HOSTS, TIMEOUT, Count, InputFile, Label, Number, OutputDir, OutputFile, Rate, Seconds

MARKS = {"pass": "green", "fail": "bold red", "undecided": "yellow"}


def _check_references(path):
    """references.toml refused while parsing, with the entry named."""
    from rmax.accept.references import load

    load(path)


@click.command("accept")
@click.option("--from", "from_ids", default=None, metavar="SURVEY[,SURVEY...]",
              help="Judge these stored surveys (each one repeat) instead of running new ones.")
@click.option("--references", "references", type=InputFile(check=_check_references), default=None, metavar="FILE",
              help="references.toml: per metric and node class, a value with its tolerance and unit (docs/ACCEPT.md).")
@click.option("--link-rate", type=Rate(), default=None,
              help="Every node's link rate, e.g. 25gbit: links within a switch are judged against it  [default: the "
                   "references' [links] rate, a virtual cluster's --link, else each NIC's speed].")
@click.option("--tolerance", type=Number(0, 99, metavar="PCT"), default=None,
              help="How much worse than its class's median a node may be (percent)  [default: the references' "
                   "[fleet] lower, else 10].")
@click.option("--confidence", type=Number(50, 99.99, metavar="PCT"), default=None,
              help="Confidence of each verdict (percent)  [default: the references', else 95].")
@click.option("--repeat", type=Count(1, 100), default=3, show_default=True,
              help="Surveys to run: each node's figures over them give its own noise.")
@click.option("--more", type=Count(0, 100), default=0, show_default=True,
              help="Sequential sampling: up to this many more surveys, of the steps with an undecided verdict only, "
                   "while any remains undecided.")
@click.option("--hosts", type=HOSTS, default=None, help="Nodes and their slots (default: this node).")
@click.option("--hostfile", type=HOSTFILE, default=None, help="Hostfile ('host slots=N' lines).")
@click.option("--steps", default=None, metavar="A,B,...", help="The survey's steps (rmax survey --list-steps).")
@click.option("--quick", is_flag=True, help="Quick surveys (rmax survey --quick).")
@click.option("--budget", type=Seconds(10, 30 * 86400, lo_open=False), default=None, help="Each survey's budget (s).")
@click.option("--launcher", type=click.Choice(sorted(REGISTRY)), default=None)
@click.option("--vcluster", metavar="NAME", default=None, callback=use_vcluster,
              help="Survey the nodes of this virtual cluster.")
@click.option("--timeout", type=TIMEOUT, default=900.0, show_default=True, help="Watchdog per step job (s).")
@click.option("--junit", "junit_file", type=OutputFile(), default=None, metavar="FILE",
              help="Also write the verdicts as JUnit XML: a test case per node and metric.")
@click.option("--drain", is_flag=True, help="Drain every failed node in Slurm (scontrol), the failures as the reason.")
@click.option("--write-references", "write_refs", type=OutputFile(), default=None, metavar="FILE",
              help="Write references.toml from this run (each class's median; refused when a node failed).")
@click.option("--out", type=OutputDir(), default=None, help="Also write the HTML report here.")
@click.option("--label", default=None, type=Label(), help="A note stored with the acceptance.")
@click.option("--all", "show_all", is_flag=True, help="Show every verdict, not only fails and undecided ones.")
@json_option
def command(from_ids, references, link_rate, tolerance, confidence, repeat, more, hosts, hostfile, steps, quick, budget, launcher,
            vcluster, timeout, junit_file, drain, write_refs, out, label, show_all, as_json):
    """Decide for every node and metric: pass, fail (with the figure, the reference or class median,
    the difference and its interval) or undecided (with the measurement that would decide), against
    references (--references) and against the median of the node's class (alike CPU, memory, NICs).
    Runs --repeat surveys (or reads --from ones) and stores the verdicts as an `accept` run.

    Exit status 1: a node failed.

    Example: rmax accept --vcluster rmax --quick --steps inventory,peakflops,stream,dgemm --junit accept.xml"""
    from dataclasses import replace

    from rmax.accept import junit, references as refs_mod, workflow
    from rmax.store import open_store

    refs = refs_mod.load(references) if references else refs_mod.References()
    if tolerance is not None:
        refs = replace(refs, fleet=replace(refs.fleet, lower=-tolerance / 100))
    if confidence is not None:
        refs = replace(refs, fleet=replace(refs.fleet, confidence=confidence / 100))
    if from_ids and (hosts or hostfile or steps or vcluster or more):
        raise RmaxError("--from judges stored surveys: give no --hosts, --hostfile, --steps, --vcluster or --more with it")
    from rmax.accept.links import declared

    rate = declared(link_rate, refs, vcluster)
    t0 = time.monotonic()
    with open_store() as store:
        if from_ids:
            surveys = workflow.surveys_of(store, from_ids)
        else:
            runner = _survey_runner(store, hosts, hostfile, steps, quick, budget, launcher, vcluster, timeout, label)
            surveys = [runner(None, i + 1, repeat) for i in range(repeat)]
        summary = workflow.evaluate(store, surveys, refs, rate)
        for extra in range(more if not from_ids else 0):
            undecided = {st for v in summary["verdicts"] if v["state"] == "undecided" for st in workflow.steps_of(v["metric"])}
            if not undecided:
                break
            surveys.append(runner(sorted(undecided), len(surveys) + 1, repeat + more))
            summary = workflow.evaluate(store, surveys, refs, rate)
        summary["seconds"] = time.monotonic() - t0
        params = {"surveys": summary["surveys"], "references": str(references) if references else None,
                  "fleet": summary["fleet"], "repeat": repeat, "more": more}
        if write_refs and summary["failed_nodes"]:
            raise RmaxError(f"not writing references from a run in which {len(summary['failed_nodes'])} node(s) failed "
                            f"({', '.join(summary['failed_nodes'][:4])})",
                            hint="references come from an accepted run: repair or leave out those nodes first")
        rec = workflow.store_accept(store, summary, params, label)
        if out:
            from rmax.report.build import write_report

            write_report(store, rec.id, out)
    from rmax.accept.verdicts import Verdict

    verdicts = [Verdict(**v) for v in summary["verdicts"]]
    if junit_file:
        junit.write(junit_file, verdicts, f"rmax accept {rec.id[:8]}", summary["seconds"])
    if write_refs:
        from rmax.textfile import write_atomic

        write_atomic(write_refs, workflow.references_text(summary, rec.id, refs.fleet.lower, refs.fleet), "the references")
    drained = {}
    if drain:
        from rmax.launch.drain import drain as drain_node

        for n in summary["failed_nodes"]:
            drained[n] = drain_node(n, workflow.drain_reason(n, summary["verdicts"]))
    if as_json:
        print_json({**rec.as_dict(), "drained": drained})
    else:
        _print(rec, summary, verdicts, show_all)
        for n, what in drained.items():
            console.print(f"{n}: {what}", markup=False)
        if junit_file:
            console.print(f"JUnit: {junit_file}", markup=False)
        if write_refs:
            console.print(f"references written: {write_refs}", markup=False)
        if out:
            console.print(f"report: {out}/index.html", markup=False)
    failed = ([f"{len(summary['failed_nodes'])} node(s) failed: " + ", ".join(summary["failed_nodes"])]
              if summary["failed_nodes"] else []) + (["HPL fell short of the model"] if summary.get("cluster_failed") else [])
    if failed:
        raise RmaxError(f"accept {rec.id[:8]}: " + "; ".join(failed), exit_code=1)


def _survey_runner(store, hosts, hostfile, steps, quick, budget, launcher, vcluster, timeout, label):
    """A function (steps or None, i, n) -> a new survey's record, run as `rmax survey` runs one."""
    from rmax.launch.request import resolve_hosts
    from rmax.survey.steps import by_name
    from rmax.survey.workflow import run_survey

    launcher, host_list, hostfile = resolve_hosts(hosts, hostfile, launcher, vcluster)
    base = steps.split(",") if steps else None
    by_name(base)        # unknown steps refused before anything runs

    def run(only, i, n):
        names = base or [s.name for s in by_name(None)]
        if only:     # sequential sampling: the inventory (it sizes the plan alike) and the undecided steps
            names = [s for s in names if s == "inventory" or s in only]
        status = err_console.status(f"accept: survey {i} of {n}")
        with status:
            rec = run_survey(store, by_name(names), hosts=host_list, quick=quick, budget=budget, launcher=launcher,
                             timeout=timeout, label=label or "rmax accept",
                             on_step=lambda name, event, info: event in ("start", "progress") and status.update(
                                 Text(f"accept: survey {i} of {n}: {name}")))
        err_console.print(Text.assemble(f"  survey {i} ", (rec.id[:8], "bold"), f": {rec.status}"
                                        + (f" ({rec.error})" if rec.error else "")))
        return rec
    return run


def _pct(x):
    return "—" if x is None else f"{100 * x:+.1f}%"


def _print(rec, summary: dict, verdicts, show_all: bool) -> None:
    from rmax.terminal import Table

    nodes = summary["nodes"]
    t = Table(title=f"accept {rec.id[:8]}: {len(nodes)} node(s), surveys "
              f"{', '.join(s[:8] for s in summary['surveys'])}; fleet tolerance {100 * summary['fleet']['lower']:g}%, "
              f"confidence {100 * summary['fleet']['confidence']:g}%")
    for col in ("Node", "Verdict", "Pass", "Fail", "Undecided", "Failed metrics"):
        t.add_column(col)
    for n, s in nodes.items():
        t.add_row(n, Text(s["state"], style=MARKS[s["state"]]), str(s["pass"]), str(s["fail"]), str(s["undecided"]),
                  "; ".join(m.split(" at ")[0] for m in s["failed"]) or "—")
    console.print(t)
    shown = [v for v in verdicts if show_all or v.state != "pass"]
    if shown:
        d = Table(title="verdicts" + ("" if show_all else " (fail and undecided; --all shows every one)"))
        for col in ("Node", "Metric", "Against", "Verdict", "Value", "Target", "Diff [interval]", "Noise from",
                    "Detectable", "Why"):
            d.add_column(col)
        for v in sorted(shown, key=lambda v: (v.state != "fail", v.node, v.metric)):
            iv = f" [{_pct(v.interval[0])}, {_pct(v.interval[1])}]" if v.interval else ""
            d.add_row(v.node, v.metric, v.against,
                      Text(v.state, style=MARKS[v.state]), f"{v.value:.4g} {v.unit}", f"{v.target:.4g} {v.unit}",
                      f"{_pct(v.diff)}{iv}", v.noise, _pct(v.detectable), v.why.split(": ", 1)[0] if v.state == "pass"
                      else v.why.split("; would decide: ")[-1] if v.state == "undecided" else v.reference or "")
        console.print(d)
    c = summary["counts"]
    console.print(f"{c['pass']} pass, {c['fail']} fail, {c['undecided']} undecided; an interval is the node's "
                  f"difference at {200 * summary['fleet']['confidence'] - 100:g}% (each edge one-sided at "
                  f"{100 * summary['fleet']['confidence']:g}%); Detectable: the smallest difference that would have "
                  "failed", soft_wrap=True, style="dim")
    if summary.get("shared_note"):
        console.print(summary["shared_note"], soft_wrap=True, style="yellow", markup=False)
    console.print(f"report: rmax report {rec.id[:8]} --out rmax-accept", markup=False)
