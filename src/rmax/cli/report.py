"""`rmax report`: a self-contained HTML report of a survey (or any run), from the store alone."""

from __future__ import annotations

import click

from rmax.cli.output import console, json_option, print_json
from rmax.params import OutputDir


@click.command("report")
@click.argument("run_id", default="latest-survey", required=False)
@click.option("--out", type=OutputDir(), default="rmax-report", show_default=True,
              help="Folder for index.html and data/.")
@json_option
def command(run_id, out, as_json):
    """Write the HTML report of a survey (default: the latest) with inline plots and CSV/JSON data.

    Example: rmax report latest --out report/"""
    from rmax.errors import MissingData
    from rmax.report.build import write_report
    from rmax.store import open_store

    with open_store(reading=True) as store:
        if run_id == "latest-survey":
            surveys = store.list(kind="survey", limit=1)
            if not surveys:
                raise MissingData("no survey stored yet", hint="run 'rmax survey' first, or name a run id")
            run_id = surveys[0].id
        path = write_report(store, run_id, out)
    if as_json:
        print_json({"run": run_id, "report": str(path)})
    else:
        console.print(f"report written: {path}")
