"""`rmax bench NAME`: one benchmark family, printed and stored. A registered
family's command is generated from it (rmax.cli.family_command)."""

from __future__ import annotations

import importlib

import click

BENCHMARKS: dict[str, tuple[str, str]] = {
}


class BenchGroup(click.Group):
    def list_commands(self, ctx):
        from rmax.bench.family import families

        return sorted({*BENCHMARKS, *(n for n, f in families().items() if f.command)})

    def get_command(self, ctx, name):
        from rmax.bench.family import families

        if name in families() and families()[name].command:
            from rmax.cli.family_command import command

            return command(families()[name])
        if name not in BENCHMARKS:
            return None
        module = importlib.import_module(BENCHMARKS[name][0])
        return getattr(module, name.replace("-", "_") + "_cmd")

    def format_commands(self, ctx, formatter):
        from rmax.bench.family import families

        titles = {**{n: b[1] for n, b in BENCHMARKS.items()}, **{n: f.title for n, f in families().items() if f.command}}
        with formatter.section("Benchmarks"):
            formatter.write_dl([(n, titles[n]) for n in self.list_commands(ctx)])


@click.group("bench", cls=BenchGroup)
def command():
    """Run one benchmark family and store the result."""
