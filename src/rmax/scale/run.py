"""Running a scaling study: every point a stored run under one `scale` parent run.

The user's command: one `scale-point` run per (rank count, repeat). What is timed:
- the program's own region when it prints one (`rmax-region-seconds: X`, rmax.scale.region):
  the slowest rank's, so the launcher is outside the time. The untimed warm-up run shows
  whether the program prints it; then no empty launches are run.
- else the wall time around the whole launch, minus the launcher's own start-up (spawning
  ranks, MPI wire-up), which grows with the rank count and would read as serial time Ts and
  Tis: just before each point an empty job is launched the same way at the same count (a
  `scale-launch` run: an MPI program that does nothing, rmax-ranks, when the user's program
  is linked with MPI, else `true`), and each point's sample is its wall time minus that
  launch's (`keep_launch` keeps the whole wall time). Paired, not minus a median: the
  launch's spread then stays in each sample's scatter, so the fit's errors carry it, and a
  launcher whose start-up has a long tail (a loaded machine) is subtracted by its mean, as
  the program's launches pay it, not by its median.
Repeats are interleaved (1, 2, 4, 1, 2, 4, ...) so that a slow phase of a
shared machine spreads over all rank counts instead of biasing one.

HPL: one `hpl` run per rank count with the repeats as repeated N in one HPL.dat
(hpcc runs its whole suite on every launch, so one launch per count keeps a
study short); the time of each test is HPL's own (factorisation and solve only)."""

from __future__ import annotations

import math
import os
import shutil
from dataclasses import replace
from typing import Callable

from rmax.errors import RmaxError, RunFailed
from rmax.launch import LaunchSpec, prepare, run_job
from rmax.native import executable
from rmax.scale.analysis import Point, Sample, analyse, command_summary
from rmax.scale.region import region_seconds
from rmax.store import Store

Progress = Callable[[str], None]


def _spec_for(base: LaunchSpec, count: int, by: str) -> LaunchSpec:
    """The launch at `count` ranks, or at the first `count` hosts with all their slots."""
    if by == "nodes":
        if not base.hosts or count > len(base.hosts):
            have = len(base.hosts) if base.hosts else 0
            raise RmaxError(f"{count} nodes requested but {have} host(s) given", hint="give --hosts or --hostfile")
        hosts = base.hosts[:count]
        return replace(base, hosts=hosts, hostfile=None, np=sum(h.slots for h in hosts), env=dict(base.env))
    return replace(base, np=count, env=dict(base.env), bind=oversubscribed_bind(base, count))


def oversubscribed_bind(base: LaunchSpec, count: int) -> str:
    """Open MPI refuses to bind more ranks than cores to cores; past the slots, ranks float."""
    return "none" if base.oversubscribe and count > base.slots and base.bind == "core" else base.bind


def _timed_launch(store: Store, kind: str, parent: str, argv: list[str], spec: LaunchSpec, timeout: float,
                  params: dict, what: str) -> tuple[float, float | None, str]:
    """One stored child run around one launch: (wall time, the program's region or None, run id);
    a failed launch, or a malformed region line, fails the study."""
    with store.start_run(kind, parent=parent, argv=argv, params=params) as pt:
        job = run_job(argv, timeout, env=spec.rank_env(), spec=spec)
        summary = {"time_s": job.duration, "statistic": "wall time of the launch"}
        try:
            err = None if job.ok else job.failure(what)
            region = region_seconds(job.stdout) if job.ok else None
        except RunFailed as bad:
            err, region = bad, None
        if region is not None:
            summary["region_s"] = region
        pt.update(summary=summary)
        if err:
            pt.finish("failed", str(err))
            raise err
    return job.duration, region, pt.id


def empty_program(program: list[str]) -> list[str]:
    """The job that costs what launching `program` costs: an MPI no-op for an MPI executable
    (its start-up includes MPI's wire-up), `true` for anything else."""
    path = shutil.which(program[0])
    try:
        with open(path or program[0], "rb") as f:
            head = f.read(4 << 20)
    except OSError:
        head = b""
    linked_mpi = head.startswith(b"\x7fELF") and (b"libmpi.so" in head or b"libmpich" in head)
    return [executable("rmax-ranks")] if linked_mpi else [shutil.which("true") or "true"]


def scale_command(program: list[str], base: LaunchSpec, counts: list[int], repeats: int, store: Store, *,
                  by: str = "ranks", launcher: str | None = None, timeout: float = 600.0, warmup: bool = True,
                  keep_launch: bool = False, max_n: int | None = None, label: str | None = None,
                  progress: Progress | None = None):
    """Run `program` at every count `repeats` times; returns the parent run's record."""
    if repeats < 1:
        raise RmaxError(f"--repeats must be at least 1, not {repeats}")
    specs = {k: _spec_for(replace(base, program=list(program)), k, by) for k in counts}
    argvs = {k: prepare(s, launcher) for k, s in specs.items()}   # bad input fails before anything runs
    baseline = empty_program(program)
    empty = {k: prepare(replace(s, program=baseline), launcher) for k, s in specs.items()}
    params = {"mode": "command", "program": list(program), "by": by, "counts": counts, "repeats": repeats,
              "launcher": launcher, "oversubscribe": base.oversubscribe, "keep_launch": keep_launch,
              "empty_program": None if keep_launch else baseline}
    points: list[Point] = []

    def summary() -> dict:
        return command_summary(points, keep_launch, os.path.basename(baseline[0]), max_n) if points else {}

    with store.start_run("scale", params=params, label=label, argv=list(program)) as parent:
        # Whether to launch empty jobs: not when the warm-up shows that the program times its own region.
        timed_region = False
        if warmup:  # first launch pays for cold caches and page faults: not a measurement
            if progress:
                progress("warm-up run at 1 rank (not stored)")
            job = run_job(argvs[counts[0]], timeout, env=specs[counts[0]].rank_env(), spec=specs[counts[0]])
            try:
                timed_region = job.ok and region_seconds(job.stdout) is not None
            except RunFailed as err:
                parent.finish("failed", f"warm-up run: {err}")
                raise
        try:
            for rep in range(repeats):
                for k in counts:
                    if progress:
                        progress(f"{k} {by}, repeat {rep + 1} of {repeats}")
                    point = {"count": k, "by": by, "np": specs[k].np, "repeat": rep, "bind": specs[k].bind}
                    launch = None
                    if not keep_launch and not timed_region:
                        t, _, i = _timed_launch(store, "scale-launch", parent.id, empty[k], specs[k], timeout, point,
                                                f"the empty MPI launch at {k} {by}")
                        launch = (t, i)
                    t, region, i = _timed_launch(store, "scale-point", parent.id, argvs[k], specs[k], timeout, point,
                                                 f"the program at {k} {by}")
                    points.append(Point(k, t, i, region, *(launch or (None, None))))
        except RunFailed as err:
            parent.update(summary=summary())
            parent.finish("failed", str(err))
            raise
        parent.update(summary=summary())
    return store.get(parent.id)


def hpl_sizes(n: int, nb: int, counts: list[int], weak: bool) -> dict[int, int]:
    """Strong: the same N everywhere. Weak: N grows as sqrt(p) so each rank's 8 N^2 / p bytes stay
    constant, rounded to a multiple of NB."""
    if not weak:
        return {k: n for k in counts}
    return {k: max(nb, int(round(n * math.sqrt(k) / nb)) * nb) for k in counts}


def scale_hpl(base: LaunchSpec, counts: list[int], repeats: int, store: Store, *, n: int, nb: int = 192,
              weak: bool = False, engine: str = "rmax", launcher: str | None = None, timeout: float = 3600.0,
              max_n: int | None = None, label: str | None = None, progress: Progress | None = None):
    from rmax.bench.family import RunContext
    from rmax.families import run
    from rmax.families.hpl import HPL
    from rmax.hpl.dat import HplConfig
    from rmax.model.hpl_model import measured_time, square_grid

    if repeats < 1:
        raise RmaxError(f"--repeats must be at least 1, not {repeats}")
    if n < 1 or nb < 1:
        raise RmaxError(f"N and NB must be at least 1 (N={n}, NB={nb})")
    sizes = hpl_sizes(n, nb, counts, weak)
    params = {"mode": "hpl-weak" if weak else "hpl-strong", "engine": engine, "counts": counts, "repeats": repeats,
              "n": n, "nb": nb, "sizes": {str(k): v for k, v in sizes.items()}}
    samples: list[Sample] = []
    with store.start_run("scale", params=params, label=label) as parent:
        for k in counts:
            p, q = square_grid(k)
            cfg = HplConfig(ns=[sizes[k]] * repeats, nbs=[nb], grids=[(p, q)])
            spec = replace(base, np=k, env=dict(base.env), bind=oversubscribed_bind(base, k))
            if progress:
                progress(f"HPL N={sizes[k]} on {k} rank(s), grid {p} x {q}, {repeats} repeat(s)")
            rec = run(HPL, HPL.options(config=cfg, engine=engine),
                      RunContext(store=store, parent=parent.id, spec=spec, launcher=launcher, timeout=timeout))
            if rec.status != "ok":
                err = RunFailed(f"HPL at {k} rank(s) {rec.status}: {rec.error}")
                parent.update(summary=analyse(samples, weak, max_n) if samples else {})
                parent.finish("failed", str(err))
                raise err
            for t in HPL.load(rec).tests:
                samples.append(Sample(k, measured_time(t.n, t.gflops, t.time_s), n=t.n, gflops=t.gflops, run_id=t.run))
        parent.update(summary=analyse(samples, weak, max_n))
    return store.get(parent.id)
