"""`rmax bench NAME`: one benchmark family, printed and stored. Every command is generated
from its registered family (rmax.cli.family_command)."""

from __future__ import annotations

import click


def _commands() -> dict:
    from rmax.families import families

    return {n: f for n, f in families().items() if f.command}


class BenchGroup(click.Group):
    def list_commands(self, ctx):
        return sorted(_commands())

    def get_command(self, ctx, name):
        fam = _commands().get(name)
        if fam is None:
            return None
        from rmax.cli.family_command import command

        return command(fam)

    def format_commands(self, ctx, formatter):
        with formatter.section("Benchmarks"):
            formatter.write_dl([(n, f.title) for n, f in sorted(_commands().items())])


@click.group("bench", cls=BenchGroup)
def command():
    """Run one benchmark family and store the result."""
