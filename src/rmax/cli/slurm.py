"""`rmax slurm script -- rmax survey ...`: an sbatch script that runs rmax inside
an allocation. Inside it SLURM_JOB_ID is set, so rmax's default launcher is
srun and every MPI kernel runs on the allocated nodes with no hostfile."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import click

from rmax.cli import slurm_values as values
from rmax.cli.output import console, print_json
from rmax.params import Count, OutputFile
from rmax.errors import RmaxError
from rmax.textfile import write_atomic


# The directives rmax writes from its own options: --sbatch may not give them a second time.
OWN = ("--job-name", "--nodes", "--time", "--output", "--ntasks-per-node", "--partition", "--account",
       "--exclusive", "--qos", "--reservation", "--constraint", "--exclude")


def render(argv: list[str], *, nodes: int, ntasks_per_node: int | None, time: str, partition: str | None,
           job_name: str, output: str, account: str | None, exclusive: bool, db: str | None,
           qos: str | None = None, reservation: str | None = None, constraint: str | None = None,
           exclude: str | None = None, extra: tuple[str, ...] = ()) -> str:
    """The script's text; every value is checked first (slurm_values) and shell-quoted."""
    if not argv:
        raise RmaxError("no command to run", hint="rmax slurm script -- rmax survey")
    if argv[0] != "rmax":
        raise RmaxError(f"the script runs rmax commands, not '{argv[0]}'", hint="rmax slurm script -- rmax survey")
    for a in argv[1:]:
        values.check_text(a, f"the argument {a!r}")
    if nodes < 1:
        raise RmaxError(f"--nodes must be at least 1, not {nodes}")
    if ntasks_per_node is not None and ntasks_per_node < 1:
        raise RmaxError(f"--ntasks-per-node must be at least 1, not {ntasks_per_node}")
    q = shlex.quote
    lines = ["#!/bin/bash", f"#SBATCH --job-name={q(values.job_name(job_name))}", f"#SBATCH --nodes={nodes}",
             f"#SBATCH --time={q(values.time_limit(time))}", f"#SBATCH --output={q(values.path(output, '--log'))}"]
    if ntasks_per_node:
        lines.append(f"#SBATCH --ntasks-per-node={ntasks_per_node}")
    if partition is not None:
        lines.append(f"#SBATCH --partition={q(values.names(partition, '--partition'))}")
    if account is not None:
        lines.append(f"#SBATCH --account={q(values.names(account, '--account'))}")
    if qos is not None:
        lines.append(f"#SBATCH --qos={q(values.names(qos, '--qos'))}")
    if reservation is not None:
        lines.append(f"#SBATCH --reservation={q(values.names(reservation, '--reservation'))}")
    if constraint is not None:
        lines.append(f"#SBATCH --constraint={q(values.constraint(constraint))}")
    if exclude is not None:
        lines.append(f"#SBATCH --exclude={q(values.hosts(exclude, '--exclude'))}")
    if exclusive:
        lines.append("#SBATCH --exclusive")   # a benchmark shares its nodes with nobody
    for given in extra:
        option, value = values.directive(given, OWN)
        lines.append(f"#SBATCH {option}" + (f"={q(value)}" if value is not None else ""))
    lines += ["# Written by `rmax slurm script`. Inside the allocation rmax launches with srun.",
              "set -euo pipefail"]
    if db is not None:
        lines.append(f"export RMAX_DB={q(values.check_text(db, '--db'))}")
    # The same rmax that wrote the script, when it is not on the nodes' PATH.
    rmax = q(str(Path(sys.executable).parent / "rmax"))
    lines.append(f"RMAX=${{RMAX:-{rmax}}}")
    lines.append('"$RMAX" ' + " ".join(q(a) for a in argv[1:]))
    return "\n".join(lines) + "\n"


@click.group("slurm")
def command():
    """Write sbatch scripts that run rmax inside an allocation."""


@command.command("script", context_settings={"ignore_unknown_options": True})
@click.argument("argv", nargs=-1, type=click.UNPROCESSED)
@click.option("--nodes", type=Count(1, 1 << 20), default=1, show_default=True, help="Nodes to allocate.")
@click.option("--ntasks-per-node", type=Count(1, 1 << 16), default=None, help="MPI ranks per node.")
@click.option("--time", "time_", default="01:00:00", show_default=True, help="Time limit.")
@click.option("--partition", default=None, help="Slurm partition.")
@click.option("--account", default=None, help="Slurm account.")
@click.option("--qos", default=None, help="Slurm quality of service.")
@click.option("--reservation", default=None, help="Slurm reservation to run in.")
@click.option("--constraint", default=None, help="Node features required (sbatch --constraint, e.g. 'ib&avx512').")
@click.option("--exclude", default=None, help="Nodes not to use (a host list, e.g. 'node[03-04]').")
@click.option("--sbatch", "extra", multiple=True, metavar="--OPTION[=VALUE]",
              help="Another #SBATCH line, e.g. --sbatch=--gres=gpu:1 (repeatable).")
@click.option("--job-name", default="rmax", show_default=True)
@click.option("--log", "log", default="rmax-%j.out", show_default=True, help="sbatch --output pattern.")
@click.option("--exclusive/--shared", default=True, show_default=True, help="Whole nodes for the job.")
@click.option("--db", default=None, help="RMAX_DB for the job (a path on a shared file system).")
@click.option("-o", "--output", "out", type=OutputFile(), default=None,
              help="Write the script here (default: stdout).")
@click.option("--json", "as_json", is_flag=True,
              help="Print the script's text, path and submit command as JSON instead of the script.")
def script_cmd(argv, nodes, ntasks_per_node, time_, partition, account, qos, reservation, constraint, exclude, extra,
               job_name, log, exclusive, db, out, as_json):
    """Write an sbatch script running one rmax command.

    Example: rmax slurm script --nodes 4 -o survey.sbatch -- rmax survey"""
    text = render(list(argv), nodes=nodes, ntasks_per_node=ntasks_per_node, time=time_, partition=partition,
                  job_name=job_name, output=log, account=account, exclusive=exclusive, db=db, qos=qos,
                  reservation=reservation, constraint=constraint, exclude=exclude, extra=extra)
    if out:
        write_atomic(out, text, "the batch script", mode=0o755)
    if as_json:
        print_json({"script": str(out) if out else None, "text": text, "submit": f"sbatch {out}" if out else None})
    elif out:
        console.print(f"wrote {out}; submit it with: sbatch {out}")
    else:
        sys.stdout.write(text)
