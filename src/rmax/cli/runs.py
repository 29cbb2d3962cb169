"""`rmax runs`: the stored runs: list, show, export, delete."""

from __future__ import annotations

import csv
import io
import json
import sys

import click
from rich.text import Text

from rmax.bench.view import plain
from rmax.cli.output import console, err_console, json_option, print_json, printable
from rmax.params import Count, OutputFile
from rmax.textfile import write_atomic
from rmax.errors import RmaxError
from rmax.store import STATUSES, open_store
from rmax.store.runs import FINAL
from rmax.store.db import NoStore


@click.group("runs")
def command():
    """List, show, export and delete stored runs."""


def _line(run) -> str:
    """The list view's line of a finished run stored without one: a family's (Family.list_line,
    which imports the family's module: kept with the summary since the store's migration 6), or
    the plain values of any other run's summary, or of one of an older shape."""
    from rmax.families import loaded

    got = loaded(run)
    return got[0].list_line(got[1]) if got is not None else _values_line(run)


def _values_line(run) -> str:
    """The first plain values of a run's summary, for a run of no family (a survey, one HPL test)."""
    t = run.summary
    if run.kind == "hpl-test" and isinstance(t.get("gflops"), (int, float)):
        return f"{t.get('code')} N={t.get('n')} NB={t.get('nb')} {t.get('p')}x{t.get('q')}: {plain(t['gflops'])} GFLOPS (one test)"
    parts = []
    for k, v in [(k, v) for k, v in run.summary.items() if k != "schema"][:2]:
        if isinstance(v, dict) and "median" in v:
            parts.append(f"{k} {plain(v['median'])}" + (f" {v['unit']}" if v.get("unit") else "") + " (median)")
        elif isinstance(v, (int, float, str)) and not isinstance(v, bool):
            parts.append(f"{k}={v}")
    return "; ".join(parts)


@command.command("list")
@click.option("--kind", default=None, help="Only runs of this kind (e.g. peakflops).")
@click.option("--status", type=click.Choice(STATUSES), default=None)
@click.option("--limit", type=Count(1, 1 << 30), default=50, show_default=True)
@json_option
def list_cmd(kind, status, limit, as_json):
    """List stored runs, newest first.

    Example: rmax runs list --kind peakflops --status ok"""
    made: dict[str, str] = {}
    kinds: list[str] = []
    try:
        with open_store(reading=True) as store:
            runs = store.list(kind=kind, status=status, limit=limit + 1)   # one more: is the list cut?
            kinds = store.kinds() if not runs and (kind or status) else []
            # A finished run stored without its line (before migration 6, or of no family): the
            # line is made once here, and kept where the store may be written.
            made = {r.id: _line(r) for r in runs if r.headline is None and r.status in FINAL}
            if made and not store.readonly:
                store.keep_headlines(made)
    except NoStore:
        runs = []
    cut = len(runs) > limit
    runs = runs[:limit]
    for r in runs:
        if r.headline is None:
            r.headline = made[r.id] if r.id in made else _values_line(r)
    if as_json:
        print_json([r.as_dict() for r in runs])
        _say_cut(cut, limit)
        return
    if not runs:
        if kind or status:
            asked = " and ".join(f"{name} {printable(value)!r}" for name, value in (("kind", kind), ("status", status))
                                 if value)
            known = f"; kinds stored: {', '.join(printable(k) for k in kinds)}" if kind else ""
            console.print(f"no stored runs of {asked}" + (known if kinds else "; no runs stored yet"))
        else:
            console.print("no runs stored yet")
        return
    from rmax.hostlist import compress
    from rmax.terminal import Table

    t = Table()
    for col in ("ID", "Kind", "Status", "Started (UTC)", "Duration (s)", "Hosts", "Summary"):
        t.add_column(col)
    style = {"ok": "green", "failed": "red", "invalid": "red", "interrupted": "yellow", "partial": "yellow",
             "running": "cyan"}
    for r in runs:
        t.add_row(r.id[:8], r.kind, Text(r.status, style=style[r.status]), r.started_at[:19].replace("T", " "),
                  f"{r.duration:.1f}" if r.duration is not None else "—", compress(r.ran_on), r.headline)
    console.print(t)
    _say_cut(cut, limit)


def _say_cut(cut: bool, limit: int) -> None:
    """After the rows, on stderr: a pipe (`| wc -l`, `| jq`) reads the rows alone, and a reader that
    left (`| head`) hears nothing more."""
    if cut:
        err_console.print(f"the newest {limit} runs shown; more are stored (--limit N for more)")


@command.command("show")
@click.argument("run_id")
@json_option
def show(run_id, as_json):
    """Everything stored about one run (an id prefix or 'latest').

    Example: rmax runs show latest"""
    with open_store(reading=True) as store:
        rec = store.get(run_id)
        children = store.children(rec.id)
    d = rec.as_dict()
    d["children"] = [c.id for c in children]
    if as_json:
        print_json(d)
        return
    for k in ("id", "kind", "status", "started_at", "ended_at", "duration_s", "hosts", "label", "parent",
              "fingerprint", "error"):
        if d.get(k) not in (None, [], ""):
            console.print(Text.assemble((k, "bold"), f": {printable(str(d[k]))}"))
    for k in ("params", "summary", "environment"):
        if d[k]:
            console.print(Text(k, style="bold") + ":")
            console.print_json(json.dumps(d[k], default=str))
    if rec.argv:
        console.print(Text.assemble(("argv", "bold"), f": {printable(' '.join(rec.argv))}"))
    if children:
        console.print(Text.assemble(("runs in it", "bold"),
                                    f": {', '.join(c.id[:8] + ' ' + c.kind for c in children)}"))
    n = sum(len(v) if isinstance(v, list) else 1 for v in rec.samples.values())
    console.print(Text.assemble(("raw samples", "bold"), f": {n} in {len(rec.samples)} series (rmax runs show --json "
                                                         f"{rec.id[:8]})"))


@command.command("export")
@click.argument("run_ids", nargs=-1)
@click.option("--format", "fmt", type=click.Choice(["json", "csv"]), default="json", show_default=True)
@click.option("--kind", default=None, help="Only runs of this kind.")
@click.option("--out", type=OutputFile(), default=None, help="File (default stdout).")
def export(run_ids, fmt, kind, out):
    """Export runs (all, or the ids given) as JSON or CSV (one row per number: its hosts and unit).

    Example: rmax runs export --format csv --out runs.csv"""
    from rmax.cli.export import COLUMNS, csv_rows, json_run

    with open_store(reading=True) as store:
        runs = [store.get(i) for i in run_ids] if run_ids else store.list(kind=kind)
    if fmt == "json":
        text = json.dumps([json_run(r) for r in runs], indent=2, default=str) + "\n"
    else:
        buf = io.StringIO()
        w = csv.writer(buf)
        w.writerow(COLUMNS)
        for r in runs:
            w.writerows(csv_rows(r))
        text = buf.getvalue()
    if out:
        write_atomic(out, text, "the export")
    else:
        sys.stdout.write(text)


@command.command("delete")
@click.argument("run_id")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@json_option
def delete(run_id, yes, as_json):
    """Delete a run and the runs grouped under it.

    Example: rmax runs delete 3fa2c1d0 --yes"""
    with open_store() as store:
        rec = store.get(run_id)
        if not yes and not click.confirm(f"delete run {rec.id[:8]} ({rec.kind}, {rec.started_at[:19]})?"):
            raise RmaxError("nothing deleted", exit_code=1)
        store.delete(rec.id)
    if as_json:
        print_json({"deleted": rec.id, "kind": rec.kind})
    else:
        console.print(f"deleted {rec.id}")
