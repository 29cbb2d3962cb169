"""The comparison of two runs as an HTML page, in the report's template."""

from __future__ import annotations

from pathlib import Path

from rmax import __version__
from rmax.errors import RmaxError
from rmax.compare import VERDICT, advice, curves, headline, paired
from rmax.report import plots as svg
from rmax.report.build import STATUS_WORDS, _env, _write_data
from rmax.report.section import Section, Table
from rmax.textfile import write_atomic


def _names(runs) -> str:
    return f"{runs[0].kind} {','.join(r.id[:8] for r in runs)}"


def write_compare(store, a, b, changes, out_dir, notes: list[str] = ()) -> Path:
    """index.html and data/ of the comparison: the metric table (and what was not compared,
    with why), then each paired family's curves with A and B overlaid."""
    rows = [[c.kind, c.host, c.metric, f"{c.a:.4g}", f"{c.b:.4g}", c.unit, f"{100 * c.change:+.1f}%",
             c.noise_from(), f"{c.p_adjusted:.3g}" if c.p_adjusted is not None else "—", VERDICT[c.significant],
             "; ".join(f"{x}: {line}" for x, line in (("A", c.busy_a), ("B", c.busy_b)) if line)]
            for c in changes]
    sec = Section(key="compare", title="Metric by metric", order=0,
                  tables=[Table(["Kind", "Host", "Metric", "A", "B", "Unit", "Change", "Noise from",
                                 "p (Holm-adjusted)", "Significant (p < 0.05)", "Busy node"], rows,
                                "noise from independent measurements: several runs on a side, the store's "
                                "earlier runs of the same configuration, or one run's own repeats (a lower "
                                "bound: they only say no); blocks timed inside one run are not")],
                  notes=[headline(changes, a[0].kind), *filter(None, [advice(changes)]), *notes],
                  data={"comparison": [c.as_dict() for c in changes]})
    sections = [sec] + [Section(key=f"curves-{i}", title=title, order=10 + i, plots=[svg.render(p) for p in ps])
                        for i, (title, ps) in enumerate(curves(paired(store, a, b)))]
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
        _write_data(out, [sec])
        html = _env().get_template("report.html.j2").render(
            title=f"{_names(a)} vs {_names(b)}",
            subtitle="; ".join(f"{x}: " + ", ".join(f"{r.id} ({r.started_at})" for r in runs)
                               for x, runs in (("A", a), ("B", b))), sections=sections,
            version=__version__, store=str(store.path), status_words=STATUS_WORDS)
        write_atomic(out / "index.html", html, "the comparison")
    except OSError as e:
        raise RmaxError(f"cannot write the comparison into {out}: {e.strerror}") from None
    return out / "index.html"
