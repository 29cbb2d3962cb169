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
from rmax.errors import RmaxError
from rmax.hpl.dat import BCAST_NAMES, HplConfig
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


def run_hpl(cfg: HplConfig, spec: LaunchSpec, store: Store, *, engine: str = "rmax", launcher: str | None = None,
            timeout: float = 3600.0, parent: str | None = None, label: str | None = None,
            blas: dict | None = None, on_line: Callable[[str], None] | None = None) -> HplOutcome:
    """Run every test of cfg on spec's ranks with the named engine; store and return the runs."""
    eng = get_engine(engine)
    if cfg.max_ranks > spec.np:
        p, q = max(cfg.grids, key=lambda g: g[0] * g[1])
        raise RmaxError(f"HPL.dat's largest grid {p} x {q} needs {p * q} ranks, but only {spec.np} are started",
                        hint=f"use --np {p * q} or smaller grids")
    workdir = Path(tempfile.mkdtemp(prefix="rmax-hpl-"))
    try:
        spec.program = eng.program(workdir, cfg)
        argv = prepare(spec, launcher)
        params = {"engine": eng.label, "np": spec.np, "hpl": cfg.to_dict(), "blas": blas or {},
                  "blas_threads": spec.blas_threads}
        hosts = [h.name for h in spec.hosts] if spec.hosts else []
        with store.start_run("hpl", params=params, hosts=hosts, parent=parent, label=label, argv=argv,
                             environment=environment(spec), fingerprint=fingerprint()) as run:
            job = run_job(argv, timeout, env=spec.rank_env(), cwd=str(workdir), on_stdout=on_line)
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
