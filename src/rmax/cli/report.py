"""`rmax report`: a self-contained HTML report of a survey (or any run), from the store alone."""

from __future__ import annotations

import click

from rmax.cli.output import console, print_json
from rmax.params import OutputDir


@click.command("report")
@click.argument("run_id", default="latest", required=False)
@click.option("--out", type=OutputDir(), default="rmax-report", show_default=True,
              help="Folder for index.html and data/.")
@click.option("--json", "as_json", is_flag=True,
              help="Print the run reported and the report's path as JSON instead of a line.")
def command(run_id, out, as_json):
    """Write the HTML report of a survey (default and `latest`: the latest survey; or any run's id)
    with inline plots and CSV/JSON data.

    Example: rmax report latest --out report/"""
    from rmax.errors import MissingData
    from rmax.report.build import write_report
    from rmax.store import open_store

    with open_store(reading=True) as store:
        which = None
        if run_id in ("latest", "latest-survey"):   # `report` is a survey's report: its latest, never a bench's
            surveys = store.list(kind="survey", limit=1)
            if not surveys:
                raise MissingData("no survey stored yet: `rmax report latest` reports the latest survey",
                                  hint="run `rmax survey` (or `rmax survey --quick`) first, or name a run id "
                                       "(rmax runs list)")
            run_id, which = surveys[0].id, f"the latest survey, {surveys[0].id[:8]} ({surveys[0].started_at[:19]})"
        path = write_report(store, run_id, out)
    if as_json:
        print_json({"run": run_id, "latest_survey": which is not None, "report": str(path)})
    else:
        console.print(f"report of {which} written: {path}" if which else f"report written: {path}")
