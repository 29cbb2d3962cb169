"""Running a scaling study: every point a stored run under one `scale` parent run.

The user's command: one `scale-point` run per (rank count, repeat), its wall time
measured around the whole launch (mpirun start-up included: that is part of
what a user waits for, and part of Ts and Tis). Repeats are interleaved
(1, 2, 4, 1, 2, 4, ...) so that a slow phase of a shared machine spreads over
all rank counts instead of biasing one.

HPL: one `hpl` run per rank count with the repeats as repeated N in one HPL.dat
(hpcc runs its whole suite on every launch, so one launch per count keeps a
study short); the time of each test is HPL's own (factorisation and solve only)."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Callable

from rmax.errors import RmaxError, RunFailed
from rmax.launch import LaunchSpec, prepare, run_job
from rmax.scale.analysis import Sample, analyse
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


def scale_command(program: list[str], base: LaunchSpec, counts: list[int], repeats: int, store: Store, *,
                  by: str = "ranks", launcher: str | None = None, timeout: float = 600.0, warmup: bool = True,
                  max_n: int | None = None, label: str | None = None, progress: Progress | None = None):
    """Run `program` at every count `repeats` times; returns the parent run's record."""
    if repeats < 1:
        raise RmaxError(f"--repeats must be at least 1, not {repeats}")
    specs = {k: _spec_for(replace(base, program=list(program)), k, by) for k in counts}
    argvs = {k: prepare(s, launcher) for k, s in specs.items()}   # bad input fails before anything runs
    params = {"mode": "command", "program": list(program), "by": by, "counts": counts, "repeats": repeats,
              "launcher": launcher, "oversubscribe": base.oversubscribe}
    with store.start_run("scale", params=params, label=label, argv=list(program)) as parent:
        if warmup:  # first launch pays for cold caches and page faults: not a measurement
            if progress:
                progress("warm-up run at 1 rank (not stored)")
            run_job(argvs[counts[0]], timeout, env=specs[counts[0]].rank_env(), spec=specs[counts[0]])
        samples: list[Sample] = []
        for rep in range(repeats):
            for k in counts:
                if progress:
                    progress(f"{k} {by}, repeat {rep + 1} of {repeats}")
                with store.start_run("scale-point", parent=parent.id, argv=argvs[k],
                                     params={"count": k, "by": by, "np": specs[k].np, "repeat": rep,
                                             "bind": specs[k].bind}) as pt:
                    job = run_job(argvs[k], timeout, env=specs[k].rank_env(), spec=specs[k])
                    pt.update(summary={"time_s": job.duration, "statistic": "wall time of the launch"})
                    if not job.ok:
                        err = job.failure(f"the program at {k} {by}")
                        pt.finish("failed", str(err))
                        parent.update(summary=analyse(samples, max_n=max_n) if samples else {})
                        parent.finish("failed", str(err))
                        raise err
                samples.append(Sample(k, job.duration, run_id=pt.id))
        parent.update(summary=analyse(samples, max_n=max_n))
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
    from rmax.hpl.dat import HplConfig
    from rmax.hpl.run import run_hpl
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
            outcome = run_hpl(cfg, spec, store, engine=engine, launcher=launcher, timeout=timeout, parent=parent.id)
            if outcome.run.status != "ok":
                err = RunFailed(f"HPL at {k} rank(s) {outcome.run.status}: {outcome.run.error}")
                parent.update(summary=analyse(samples, weak, max_n) if samples else {})
                parent.finish("failed", str(err))
                raise err
            for t in outcome.tests:
                samples.append(Sample(k, measured_time(t.params["n"], t.summary), n=t.params["n"],
                                      gflops=float(t.summary["gflops"]), run_id=t.id))
        parent.update(summary=analyse(samples, weak, max_n))
    return store.get(parent.id)
