"""`rmax launch`: check a launcher, a hostfile or an allocation before measuring with it."""

from __future__ import annotations

import click

from rmax.bench.runner import Parsed, run_kernel
from rmax.cli.launch_options import launch_options
from rmax.launch.request import spec_from_options
from rmax.cli.output import console, json_option, print_json
from rmax.errors import RmaxError
from rmax.launch import REGISTRY, get_launcher
from rmax.native import executable


@click.group("launch")
def command():
    """Check where MPI ranks land through a launcher."""


def _parse_ranks(records: list[dict]) -> Parsed:
    ranks = [r for r in records if r.get("schema") == "rmax.ranks/1"]
    size = ranks[0]["size"] if ranks else 0
    ok = len(ranks) == size and all(r["allreduce_ok"] for r in ranks)
    summary = {"ranks": size, "hosts": sorted({r["host"] for r in ranks}),
               "allreduce_ok": ok, "placement": ranks}
    return Parsed(summary, {}, "ok" if ok else "invalid", None if ok else "ranks did not all report a correct allreduce")


@command.command("check")
@launch_options()
@json_option
def check(as_json: bool, launcher: str | None, timeout: float, **opts) -> None:
    """Start one rank per slot and show each rank's host, CPUs and BLAS threads.

    Example: rmax launch check --np 2 --blas-threads 1"""
    spec = spec_from_options([executable("rmax-ranks"), "--json", "-"], **opts)
    record = run_kernel("launch-check", spec, params={"np": spec.np, "launcher": get_launcher(launcher).name,
                                                       "bind": spec.bind, "blas_threads": spec.blas_threads},
                        parse=_parse_ranks, launcher=launcher, timeout=timeout)
    if as_json:
        print_json(record.as_dict())
        return
    from rmax.terminal import Table

    t = Table(title=f"{record.summary['ranks']} ranks via {record.params['launcher']} (run {record.id[:8]})")
    for col in ("Rank", "Host", "PID", "CPUs", "BLAS threads"):
        t.add_column(col)
    for r in record.summary["placement"]:
        t.add_row(str(r["rank"]), r["host"], str(r["pid"]), r["cpus"], r["env"].get("OPENBLAS_NUM_THREADS", "unset"))
    console.print(t)
    console.print(f"allreduce check: {'passed' if record.summary['allreduce_ok'] else 'FAILED'}")
    if record.status != "ok":
        raise RmaxError("launch check failed: " + (record.error or record.status), exit_code=1)


@command.command("launchers")
@json_option
def launchers(as_json: bool) -> None:
    """List the registered launchers and whether each can run here."""
    rows = [{"name": n, "available": c().available(), "summary": c.summary, "package": c.package,
             "detail": c().detail(), "build": _build(c())} for n, c in sorted(REGISTRY.items())]
    if as_json:
        print_json(rows)
        return
    for r in rows:
        build = r["build"]
        runs = (f"; runs the {build['build']} build ({build['implementation']} {build['version'] or ''}".rstrip() + ")"
                if build and build.get("build") else f"; {build['error']}" if build else "")
        console.print(f"{r['name']:<8} {'yes' if r['available'] else 'no ':<4} {r['summary']}"
                      + (f"; {r['detail']}" if r["detail"] else "") + runs, highlight=False)
    from rmax.native import mpi_builds

    console.print("rmax MPI builds: " + ("; ".join(f"{b.name} ({b.implementation} {b.version or ''}".rstrip()
                                                   + f": rmax-*{b.suffix})" for b in mpi_builds().values())
                                          or "none (run 'make install')"), highlight=False)


def _build(launcher) -> dict | None:
    """The build of rmax's MPI executables a launcher runs (None: the local launcher runs one process)."""
    if launcher.name == "local":
        return None
    try:
        return launcher.build().brief()
    except RmaxError as e:
        return {"error": e.message}
