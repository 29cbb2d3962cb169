"""`rmax hpl`: run HPL (rmax-hpl, hpcc or a user's xhpl) from an HPL.dat and store every test."""

from __future__ import annotations

from pathlib import Path

import click

from rmax.cli.launch_options import launch_options
from rmax.launch.request import spec_from_options
from rmax.cli.output import console, json_option, print_json
from rmax.params import TOPOLOGY, Label
from rmax.errors import RmaxError


@click.group("hpl")
def command():
    """Run HPL from an HPL.dat and store every test."""


def _read(dat: str | None, np: int | None):
    """The HPL input at dat (default ./HPL.dat) read by rmax-hpl's grammar, its grids checked
    against --np when given: the checks in the order rmax-hpl makes them."""
    from rmax.hpl.dat import read

    path = Path(dat or "HPL.dat")
    if not path.exists():
        raise RmaxError(f"{path} not found", hint="give an HPL.dat path, or run in a folder that has one")
    return read(path, ranks=np)


@command.command("run")
@click.argument("dat", required=False, type=click.Path(dir_okay=False))
@click.option("--engine", default="rmax", show_default=True, metavar="rmax|hpcc|xhpl:PATH",
              help="Which HPL implementation runs the tests.")
@click.option("--blas", default=None, metavar="NAME|PATH", help="BLAS for this run: openblas, blis, atlas, reference or a path.")
@click.option("--label", default=None, type=Label(), help="A note stored with the run.")
@click.option("--placement", type=click.Choice(["natural", "topology"]), default="natural", show_default=True,
              help="natural: ranks in hostfile order; topology: process rows (flat grids) or columns inside switches.")
@click.option("--topology", "topology_file", type=TOPOLOGY, default=None,
              help="cluster.toml with the switch groups for --placement topology (default: the latest inference).")
@click.option("--progress", "show_progress", is_flag=True,
              help="Show each test's progress on stderr: fraction of the work, elapsed time, running GFLOPS "
                   "(the rmax engine; hpcc and xhpl report none).")
@launch_options(default_np="the largest grid's P x Q")
@json_option
def run_cmd(dat, engine, blas, label, placement, topology_file, show_progress, as_json, launcher, timeout, **opts):
    """Run every test of HPL.dat (default ./HPL.dat, or rmax-hpl's JSON input: N, NB, P, Q, ...).

    Example: rmax hpl run HPL.dat --np 2 --engine rmax"""
    from rmax.bench.family import RunContext
    from rmax.families import run
    from rmax.families.hpl import HPL
    from rmax.store import open_store

    cfg = _read(dat, opts["np"])
    spec = spec_from_options([], default_np=cfg.max_ranks, **opts)
    blas_info = {}
    if blas:
        from rmax import blas as blas_mod

        lib = blas_mod.resolve(blas)
        spec.env.update(blas_mod.env_for(lib))
        blas_info = {"requested": blas, **blas_mod.loaded(spec.env)}
    echo = None if as_json else (lambda line: click.echo(line, nl=False))
    from contextlib import nullcontext

    from rmax.topology.hplplace import hpl_rankfile

    placing = hpl_rankfile(cfg, spec, launcher, topology_file) if placement == "topology" else nullcontext()
    from rmax.cli.hpl_progress import hpl_progress

    with placing as how, open_store() as store:
        if how and not as_json:
            console.print(how)
        with hpl_progress(show_progress) as on_progress:
            rec = run(HPL, HPL.options(config=cfg, engine=engine, blas=blas_info),
                      RunContext(store=store, label=label, spec=spec, launcher=launcher, timeout=timeout,
                                 on_stdout=echo, on_progress=on_progress))
        tests = store.children(rec.id)
    if as_json:
        print_json({**rec.as_dict(), "tests": [t.as_dict() for t in tests]})
    else:
        from rmax.cli.family_command import show_run

        show_run(HPL, rec)
    if rec.status != "ok":
        raise RmaxError(f"HPL run {rec.id[:8]} {rec.status}: {rec.error}", exit_code=1)


LISTED = 20      # tests shown in the table; --json lists up to JSON_LISTED
JSON_LISTED = 10000


@command.command("check")
@click.argument("dat", required=False, type=click.Path(dir_okay=False))
@launch_options(default_np="the largest grid's P x Q")
@json_option
def check_cmd(dat, as_json, launcher, timeout, **opts):
    """Read HPL.dat as `rmax hpl run` would and list its tests; nothing runs, nothing is stored.

    The same decision as a run's: rmax-hpl's grammar, the memory of this node for the
    ranks placed on it, the largest grid against --np. Example: rmax hpl check HPL.dat --np 4"""
    from itertools import islice

    from rmax.families.hpl import admit

    cfg = _read(dat, opts["np"])
    spec = spec_from_options([], default_np=cfg.max_ranks, **opts)
    spec.validate()   # the launch a run would make: refused here as it would be there
    cfg = admit(cfg, spec)
    tests = [{"code": cfg.variant_code(t), **t} for t in islice(cfg.tests(), JSON_LISTED if as_json else LISTED)]
    if as_json:
        print_json({"hpl": cfg.to_dict(), "test_count": cfg.test_count, "tests": tests})
        return
    from rmax.terminal import Table

    console.print(f"{dat or 'HPL.dat'}: {cfg.test_count} test(s) on up to {cfg.max_ranks} rank(s); nothing was run")
    t = Table()
    for col in ("T/V", "N", "NB", "P x Q"):
        t.add_column(col)
    for x in tests:
        t.add_row(x["code"], str(x["n"]), str(x["nb"]), f"{x['p']} x {x['q']}")
    console.print(t)
    if cfg.test_count > len(tests):
        console.print(f"... and {cfg.test_count - len(tests)} more")


@command.command("engines")
@json_option
def engines_cmd(as_json):
    """List the HPL engines."""
    from rmax.hpl.engines import ENGINES

    rows = [{"name": n, "summary": c.summary} for n, c in sorted(ENGINES.items())]
    if as_json:
        print_json(rows)
    else:
        for r in rows:
            console.print(f"{r['name']:<6} {r['summary']}")
