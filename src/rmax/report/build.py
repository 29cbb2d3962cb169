"""Building the HTML report of a survey (or any run with the runs under it) from the store."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import jinja2

from rmax import __version__
from rmax.errors import RmaxError
from rmax.report import sections as _registered  # noqa: F401  (registers the builders)
from rmax.report.section import BUILDERS, Section, Table, sentence
from rmax.report.sections.generic import generic_section
from rmax.store import Store
from rmax.store.runs import RunRecord
from rmax.textfile import make_folder, write_atomic

NUMBER = re.compile(r"^-?[0-9][0-9.,eE+\-]*( x -?[0-9]+)?$")
STATUS_WORDS = ("ok", "failed", "invalid", "interrupted", "skipped", "running")


def _env() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.PackageLoader("rmax.report", "templates"),
                             autoescape=True, undefined=jinja2.StrictUndefined)
    env.tests["number_like"] = lambda v: isinstance(v, str) and bool(NUMBER.match(v))
    env.filters["sentence"] = sentence
    return env


def collect_sections(parent: RunRecord, runs: list[RunRecord], trials: dict[str, list[RunRecord]] | None = None
                     ) -> list[Section]:
    """One or more sections per run kind, then the survey's own steps.

    trials: a tuning session's id -> its trial runs, which go to the tuning section only."""
    by_kind: dict[str, list[RunRecord]] = {}
    for r in runs:
        by_kind.setdefault(r.kind, []).append(r)
    for tune_run in by_kind.get("tune", []):
        tune_run.samples = {**tune_run.samples, "trial_runs": [t.as_dict() for t in (trials or {}).get(tune_run.id, [])]}
    out: list[Section] = []
    done = set()
    from rmax.families import families
    from rmax.report.sections.family import family_section

    fams = families()
    for kind, recs in by_kind.items():
        if kind in fams:
            out.extend(family_section(fams[kind], recs))
            continue
        fn = BUILDERS.get(kind)
        if fn in done:
            continue
        if fn:
            done.add(fn)
            group = [r for r in runs if BUILDERS.get(r.kind) is fn]
            out.extend(fn(group))
        else:
            out.append(generic_section(kind, recs))
    if parent.kind == "survey":
        from rmax.report.summary import steps_section, summary_section

        out.append(summary_section(parent, runs))
        out.append(steps_section(parent, runs))
    return sorted(out, key=lambda s: s.order)


def _write_data(out: Path, sections: list[Section]) -> None:
    """data/: each section's data as JSON and CSV, and each folded table's cells as CSV (its link)."""
    data_dir = make_folder(out / "data", "the report's data folder")
    for s in sections:
        for i, t in enumerate(s.tables, 1):
            if t.folded:
                buf = io.StringIO(newline="")
                w = csv.writer(buf)
                w.writerow(t.columns)
                w.writerows(t.rows)
                t.csv = re.sub(r"[^\w-]", "_", s.key) + f"-table{i}"   # a stored run kind names no path
                write_atomic(data_dir / f"{t.csv}.csv", buf.getvalue(), folder_is_ours=True)
        for name, rows in s.data.items():
            write_atomic(data_dir / f"{name}.json", json.dumps(rows, indent=1, default=str), folder_is_ours=True)
            keys = list(dict.fromkeys(k for r in rows for k in r))
            buf = io.StringIO(newline="")
            w = csv.DictWriter(buf, fieldnames=keys)
            w.writeheader()
            for r in rows:
                w.writerow({k: json.dumps(v) if isinstance(v, (list, dict)) else v for k, v in r.items()})
            write_atomic(data_dir / f"{name}.csv", buf.getvalue(), folder_is_ours=True)


def _descendants(store: Store, run_id: str) -> list[RunRecord]:
    out = []
    for c in store.children(run_id):
        out += [c, *_descendants(store, c.id)]
    return out


def write_report(store: Store, run_id: str, out_dir: str | Path) -> Path:
    """Write index.html and data/ for the run (a survey: with all its runs) into out_dir."""
    parent = store.get(run_id)
    runs = store.children(parent.id)
    if parent.kind != "survey":
        runs = [parent, *runs]
    trials: dict[str, list[RunRecord]] = {}
    for child in list(runs):
        if child.kind == "tune":  # its trials (and their tests) belong to the tuning section alone
            trials[child.id] = [t for t in _descendants(store, child.id) if t.kind == "hpl-test"]
    # An HPL execution's tests are in its own summary (the hpl family's view), not sections of their own.
    runs = [r for r in runs if r.kind != "hpl-test"]
    sections = collect_sections(parent, runs, trials)
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
        _write_data(out, sections)
    except OSError as e:
        raise RmaxError(f"cannot write the report into {out}: {e.strerror}") from None
    title = parent.label or f"{parent.kind} {parent.id[:8]}"
    subtitle = (f"{parent.kind} {parent.id} on {', '.join(parent.hosts) or 'this node'}; started "
                f"{parent.started_at} UTC; status {parent.status}" + (f" ({parent.error})" if parent.error else ""))
    html = _env().get_template("report.html.j2").render(
        title=title, subtitle=subtitle, sections=sections, version=__version__, store=str(store.path),
        status_words=STATUS_WORDS)
    return write_atomic(out / "index.html", html, "the report")


__all__ = ["write_report", "collect_sections", "Section", "Table"]
