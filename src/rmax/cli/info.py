"""`rmax info`: this node's inventory and Rpeak."""

from __future__ import annotations

import click

from rmax.cli.output import console, json_option, print_json


@click.command("info")
@json_option
@click.option("--measure/--no-measure", default=True,
              help="Measure the FMA peak (about 1 s) to check the nominal Rpeak and count FMA units.")
def command(as_json: bool, measure: bool) -> None:
    """Show this node: CPU, caches, memory, NUMA, NICs, MPI, BLAS, compilers and Rpeak."""
    from rmax.inventory import collect

    inv = collect(measure=measure)
    if as_json:
        print_json(inv)
        return
    from rmax.inventory.render import render
    console.print(render(inv))
