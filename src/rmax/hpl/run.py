"""Running HPL through any engine as stored runs: one `hpl` run for the
execution, and under it one `hpl-test` run per test of the HPL.dat, each with
its parameters, time, GFLOPS and residual verdict."""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from rmax.bench.runner import environment, fingerprint
from rmax.hpl.dat import BCAST_NAMES, HplConfig, checked
from rmax.hpl.engines import get_engine
from rmax.hpl.output import HplResult
from rmax.launch import LaunchSpec, prepare, run_job
from rmax.store import Store
from rmax.store.runs import RunRecord


@dataclass
class HplOutcome:
    run: RunRecord
    tests: list[RunRecord]


def _test_params(r: HplResult) -> dict:
    v = r.variant
    return {"n": r.n, "nb": r.nb, "p": r.p, "q": r.q, "code": r.code, **v, "bcast_name": BCAST_NAMES[v["bcast"]]}


def _test_summary(r: HplResult, extra: dict) -> dict:
    s = {"gflops": r.gflops, "time_s": r.time, "residual": r.residual, "verdict": r.verdict or "not checked"}
    if "phases_s" in extra:      # rmax-hpl's JSON: {phase: {"max": s, "min": s}}
        s["phases"] = extra["phases_s"]
    for key, name in (("wait_s", "phases_wait"), ("compute_s", "phases_compute")):
        if key in extra:         # the same phases split into time blocked in MPI and the rest, plus "total"
            s[name] = extra[key]
    return s


def _ranks_per_node(spec: LaunchSpec) -> int:
    """The most ranks one node will hold (hosts fill in order, as mpirun's by-slot mapping does)."""
    most = spec.np
    if spec.ranks_per_node:
        most = min(most, spec.ranks_per_node)
    elif spec.hosts:
        most = min(most, max(h.slots for h in spec.hosts))
    return max(most, 1)


def admit(cfg: HplConfig, spec: LaunchSpec) -> HplConfig:
    """cfg as it will run, or its refusal: rmax-hpl's grammar, its grids against the ranks
    started and its memory check with the ranks per node. run_hpl asks this before any run
    row exists; `rmax hpl check` asks only this. (An --np below 1 is the launcher's to refuse.)"""
    return checked(cfg, ranks=spec.np if spec.np >= 1 else None, node_ranks=_ranks_per_node(spec))


def run_hpl(cfg: HplConfig, spec: LaunchSpec, store: Store, *, engine: str = "rmax", launcher: str | None = None,
            timeout: float = 3600.0, parent: str | None = None, label: str | None = None,
            blas: dict | None = None, on_line: Callable[[str], None] | None = None) -> HplOutcome:
    """Run every test of cfg on spec's ranks with the named engine; store and return the runs."""
    eng = get_engine(engine)
    cfg = admit(cfg, spec)
    workdir = Path(tempfile.mkdtemp(prefix="rmax-hpl-"))
    try:
        spec.program = eng.program(workdir, cfg)
        argv = prepare(spec, launcher)
        params = {"engine": eng.label, "np": spec.np, "hpl": cfg.to_dict(), "blas": blas or {},
                  "blas_threads": spec.blas_threads}
        hosts = [h.name for h in spec.hosts] if spec.hosts else []
        # Scratch, removed if rmax dies mid-run: the work folder and --placement topology's rankfile.
        rankfiles = [spec.extra_args[i + 1] for i, a in enumerate(spec.extra_args[:-1]) if a == "--rankfile"]
        with store.start_run("hpl", params=params, hosts=hosts, parent=parent, label=label, argv=argv,
                             environment=environment(spec), fingerprint=fingerprint(),
                             scratch=[str(workdir), *rankfiles]) as run:
            job = run_job(argv, timeout, env=spec.rank_env(), cwd=str(workdir), on_stdout=on_line, spec=spec)
            got = eng.collect(workdir, job.stdout)
            tests = []
            for i, r in enumerate(got.results):
                extra = got.extras[i] if i < len(got.extras) else {}
                with store.start_run("hpl-test", parent=run.id, params=_test_params(r), hosts=hosts) as t:
                    t.update(summary=_test_summary(r, extra))
                    if r.verdict == "FAILED":
                        t.finish("invalid", f"residual {r.residual:.4g} above the threshold {cfg.threshold}")
                tests.append(store.get(t.id))
            best = max(got.results, key=lambda r: r.gflops, default=None)
            summary = {"tests": len(got.results),
                       "passed": sum(r.verdict == "PASSED" for r in got.results),
                       "failed": sum(r.verdict == "FAILED" for r in got.results),
                       **({"best": {"gflops": best.gflops, "statistic": "max over tests", "code": best.code,
                                    "n": best.n, "nb": best.nb, "p": best.p, "q": best.q, "time_s": best.time}}
                          if best else {}),
                       **got.info}
            run.update(summary=summary, samples={"output": got.text})
            if not job.ok:
                run.finish("failed", str(job.failure(f"HPL ({eng.label})")))
            elif not got.results:
                run.finish("failed", f"HPL ({eng.label}) printed no result line; see the output in this run's samples")
            elif summary["failed"]:
                run.finish("invalid", f"{summary['failed']} of {len(got.results)} tests FAILED the residual check")
        return HplOutcome(store.get(run.id), tests)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
