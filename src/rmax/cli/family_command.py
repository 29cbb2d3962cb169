"""`rmax bench NAME`, generated from the family: one option per field of its options
dataclass (type, range, default and quick value from the field), --quick, --timeout,
--json, and the launch options for families that run MPI ranks. The run goes through
rmax.bench.family.run; its tables are the same View the HTML report renders."""

from __future__ import annotations

import inspect

import click

from rmax.bench.family import UNSET, Family, RunContext, option_fields
from rmax.families import run
from rmax.bench.view import View
from rmax.cli.output import console, json_option, run_and_show
from rmax.params import Seconds, Size
from rmax.sizes import human_bytes


def _shown(value, type_) -> str:
    """An option value as a user would type it: sizes as sizes, lists comma-separated."""
    if isinstance(value, tuple):
        return ",".join(_shown(v, type_) for v in value)
    if isinstance(type_, Size) and isinstance(value, int):
        return human_bytes(value).replace(" ", "")
    return str(value)


def _default_text(f, info) -> str:
    parts = []
    if info.show:
        parts.append(f"default: {info.show}")
    elif f.default not in (None, False):
        parts.append(f"default: {_shown(f.default, info.type)}")
    if info.quick is not UNSET:
        parts.append(f"quick: {_shown(info.quick, info.type)}")
    return f" [{'; '.join(parts)}]" if parts else ""


def _params(family: Family) -> list[click.Parameter]:
    out: list[click.Parameter] = []
    for f, info in option_fields(family.Options):
        if not info.cli:
            continue
        if info.flag:
            # A flag sets the field to True (--validate) or, named --no-..., to False.
            value = not info.flag.startswith("--no-")
            out.append(click.Option([info.flag, f.name], is_flag=True, flag_value=value, default=None,
                                    help=info.help))
            continue
        out.append(click.Option(["--" + f.name.replace("_", "-"), f.name], type=info.type, default=None,
                                metavar=info.metavar, help=info.help + _default_text(f, info)))
    return out


def render(view: View, title: str) -> None:
    """A family's view on the terminal: each table under its caption, then the notes."""
    from rmax.terminal import Table as RichTable

    for i, t in enumerate(view.tables):
        rt = RichTable(title=f"{title}: {t.caption}" if (i == 0 and t.caption) else (t.caption or title))
        for j, col in enumerate(t.columns):
            rt.add_column(col, justify="left" if j < t.left else "right")
        for row in t.rows:
            rt.add_row(*row)
        console.print(rt)
    for note in view.notes:
        console.print(note, soft_wrap=True)


def show_run(family: Family, record) -> None:
    from rmax.bench.family import StaleSummary

    try:
        s = family.load(record)
    except StaleSummary:
        console.print(f"{family.name} run {record.id[:8]}: {record.status} (no summary)")
        return
    render(family.view(s), f"{family.name} (run {record.id[:8]})")


def command(family: Family) -> click.Command:
    net = family.scope == "net"

    def callback(quick, as_json, timeout=None, launcher=None, **kw):
        fields = {f.name for f, _ in option_fields(family.Options)}
        given = {k: v for k, v in kw.items() if k in fields and v is not None}
        spec = None
        if net:
            from rmax.launch.request import spec_from_options

            spec = spec_from_options([], default_np=family.default_np,
                                     **{k: v for k, v in kw.items() if k not in fields})
        o = family.options(quick, **given)
        ctx = RunContext(spec=spec, launcher=launcher, timeout=timeout, quick=quick)

        def start(tick):
            ctx.on_stdout = tick
            return run(family, o, ctx)

        run_and_show(family.name, start, lambda rec: show_run(family, rec), as_json)

    doc = inspect.cleandoc(type(family).__doc__ or family.title)
    if family.example:
        doc += f"\n\nExample: {family.example}"
    cmd = click.Command(family.name, callback=callback, help=doc, short_help=family.title,
                        params=[*_params(family),
                                click.Option(["--quick"], is_flag=True,
                                             help="The quick values: fewer points, shorter budgets.")])
    if net:
        from rmax.cli.launch_options import launch_options

        cmd = launch_options(default_np=str(family.default_np or "cores"))(cmd)
        # The family knows how long its options take (Family.timeout); a fixed default would override it.
        timeout = next(p for p in cmd.params if p.name == "timeout")
        timeout.default, timeout.show_default = None, False
        timeout.help = "Seconds before the watchdog kills the job (default: from the options)."
    else:
        cmd.params.append(click.Option(["--timeout"], type=Seconds(1, 86400, lo_open=False), default=None,
                                       help="Seconds before the kernel is killed (default: from the budget)."))
    return json_option(cmd)

