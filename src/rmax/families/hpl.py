"""hpl: HPL through any engine (rmax-hpl, hpcc, a user's xhpl) as stored runs: one `hpl` run
for the execution and under it one `hpl-test` run per test of the input, each with its
parameters, time, GFLOPS and residual verdict. `rmax hpl run`, a survey, the tuner, the scaling
study and the BLAS comparison all run HPL through this family's execute()."""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from rmax.bench.family import FAMILIES, Family, RunContext, Summary, option, register
from rmax.bench.runner import environment, fingerprint
from rmax.bench.view import Figure, Plot, Table, View, figure
from rmax.hpl import hpcc_kernels
from rmax.hpl.dat import HplConfig, checked
from rmax.hpl.result import HplTest
from rmax.launch import LaunchSpec, prepare, run_job

BEST = "best test"
TRACED = 10      # trajectories drawn in one plot at most


@dataclass
class HplOptions:
    config: HplConfig | None = option(None, "The tests: HPL.dat's values.", cli=False)
    engine: str = option("rmax", "rmax, hpcc or xhpl:PATH.", cli=False)
    blas: dict | None = option(None, "The BLAS the ranks load, as recorded.", cli=False)


@dataclass
class HplTestSummary(HplTest, Summary):
    SCHEMA = "rmax.hpl-test/3"
    READS = ("rmax.hpl-test/2",)     # /3 added the trajectory


@dataclass
class HplSummary(Summary):
    SCHEMA = "rmax.hpl/3"
    READS = ("rmax.hpl/2",)          # /3 added the trajectory and the typed hpcc results
    engine: str
    np: int
    tests: list[HplTest]
    passed: int
    failed: int
    threshold: float
    hpcc_summary: dict[str, str] | None = None     # hpcc's key=value block (StarDGEMM, ...), as printed
    hpcc: dict[str, float] | None = None           # hpcc's other kernels' results (rmax.hpl.hpcc_kernels.KERNELS)
    unit: str = "GFLOPS"
    statistic: str = BEST

    def __post_init__(self):
        if self.hpcc is None and self.hpcc_summary:    # read from the block itself (a summary of schema /2)
            self.hpcc = hpcc_kernels.results(self.hpcc_summary) or None

    def best(self) -> HplTest | None:
        return max(self.tests, key=lambda t: t.gflops, default=None)


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
    started and its memory check with the ranks per node. A run asks this before any run
    row exists; `rmax hpl check` asks only this. (An --np below 1 is the launcher's to refuse.)"""
    return checked(cfg, ranks=spec.np if spec.np >= 1 else None, node_ranks=_ranks_per_node(spec))


def _spec(o, ctx: RunContext) -> LaunchSpec:
    return ctx.spec or LaunchSpec(program=[], np=o.config.max_ranks)


@register
class Hpl(Family):
    """HPL: every test of an HPL input with the chosen engine (`rmax hpl run`)."""

    name = "hpl"
    native = None   # the tests come from HPL.dat, not from a kernel option table
    title = "HPL"
    command = False             # the user's command is `rmax hpl run`, which reads an HPL.dat
    order = 60                  # the survey's own HPL step (rmax.survey.steps.Hpl) sizes N: no SurveyPlan
    Options = HplOptions
    Summary = HplSummary

    def check(self, o, ctx):
        from rmax.hpl.engines import get_engine

        get_engine(o.engine)
        admit(o.config, _spec(o, ctx))

    def execute(self, o, ctx: RunContext):
        """Run every test of o.config on ctx.spec's ranks; store the execution and one run per test."""
        from rmax.hpl.engines import get_engine
        from rmax.store import open_store

        eng = get_engine(o.engine)
        spec = _spec(o, ctx)
        cfg = admit(o.config, spec)
        store = ctx.store or open_store()
        workdir = Path(tempfile.mkdtemp(prefix="rmax-hpl-"))
        try:
            spec.program = eng.program(workdir, cfg)
            argv = prepare(spec, ctx.launcher)
            params = {"engine": eng.label, "np": spec.np, "hpl": cfg.to_dict(), "blas": o.blas or {},
                      "blas_threads": spec.blas_threads, "quick": ctx.quick}
            hosts = [h.name for h in spec.hosts] if spec.hosts else []
            # Scratch, removed if rmax dies mid-run: the work folder and --placement topology's rankfile.
            rankfiles = [spec.extra_args[i + 1] for i, a in enumerate(spec.extra_args[:-1]) if a == "--rankfile"]
            hpl_timeout = ctx.timeout if ctx.timeout is not None else 3600.0
            extra = eng.allowance(cfg, spec.np, hpl_timeout)
            timeout = hpl_timeout + (extra[0] if extra else 0.0)
            with store.start_run("hpl", params=params, hosts=hosts, parent=ctx.parent, label=ctx.label, argv=argv,
                                 environment=environment(spec), fingerprint=fingerprint(),
                                 scratch=[str(workdir), *rankfiles]) as run:
                job = run_job(argv, timeout, env=spec.rank_env(), cwd=str(workdir), on_stdout=ctx.on_stdout,
                              spec=spec, on_stderr=eng.progress(cfg, ctx.on_progress))
                got = eng.collect(workdir, job.stdout, cfg)
                for t in got.tests:
                    with store.start_run("hpl-test", parent=run.id, params=t.params(), hosts=hosts) as tr:
                        tr.update(summary=HplTestSummary(**t.__dict__).to_dict())
                        if t.verdict == "FAILED":
                            tr.finish("invalid", f"residual {t.residual:.4g} above the threshold {cfg.threshold}")
                    t.run = tr.id
                summary = HplSummary(eng.label, spec.np, got.tests, sum(t.verdict == "PASSED" for t in got.tests),
                                     sum(t.verdict == "FAILED" for t in got.tests), cfg.threshold, got.hpcc_summary)
                run.update(summary=summary.to_dict(), samples={"output": got.text}, headline=self.list_line(summary))
                if not job.ok:
                    why = job.failure(f"HPL ({eng.label})")
                    if job.timed_out and extra:
                        d = 0 if extra[0] >= 10 else 2
                        why.message += f"; the {timeout:.{d}f} s timeout included {extra[0]:.{d}f} s for {extra[1]}"
                    run.finish("failed", str(why))
                elif got.error:
                    run.finish("failed", f"HPL ({eng.label}): {got.error}")
                elif not got.tests:
                    run.finish("failed", f"HPL ({eng.label}) printed no result line; see the output in this run's "
                                         "samples")
                elif summary.failed:
                    run.finish("invalid", f"{summary.failed} of {len(got.tests)} tests FAILED the residual check")
            return store.get(run.id)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
            if ctx.store is None:
                store.close()

    def headline(self, s: HplSummary) -> list[Figure]:
        if not s.tests:
            return []
        i, best = max(enumerate(s.tests), key=lambda it: it[1].gflops)
        f = figure(s, ("tests", i, "gflops"), "rmax",
                   f"HPL Rmax (N={best.n}, NB={best.nb}, {best.p}x{best.q}, {s.engine})", "GFLOPS", BEST,
                   role="hpl_rmax", at=f"N={best.n} NB={best.nb} {best.p}x{best.q}")
        return [f] if f else []

    def metrics(self, s: HplSummary) -> list[Figure]:
        """The headline, and hpcc's other kernels when hpcc ran (rmax compare pairs them by key)."""
        out = self.headline(s)
        for k in hpcc_kernels.KERNELS:
            f = figure(s, ("hpcc", k.key), f"hpcc.{k.key}", f"hpcc {k.title}", k.unit, k.statistic)
            if f:
                out.append(f)
        return out

    def view(self, s: HplSummary) -> View:
        rows = [[(t.run or "")[:8], t.code, str(t.n), str(t.nb), f"{t.p} x {t.q}", f"{t.time_s:.2f}", f"{t.gflops:.2f}",
                 f"{t.residual:.4g}" if t.residual is not None else "—", t.verdict] for t in s.tests]
        table = Table(["Test run", "T/V", "N", "NB", "P x Q", "Time (s)", "GFLOPS", "Residual", "Check"], rows,
                      f"via {s.engine}, {s.np} ranks", left=2)
        notes = [] if s.tests else ["No HPL test finished."]
        data = [{"test_run": t.run, "engine": s.engine, "code": t.code, "n": t.n, "nb": t.nb, "p": t.p, "q": t.q,
                 "time_s": t.time_s, "gflops": t.gflops, "residual": t.residual, "verdict": t.verdict}
                for t in s.tests]
        tables, datasets = [table], {"hpl_tests": data}
        if s.hpcc:
            kernels = [k for k in hpcc_kernels.KERNELS if k.key in s.hpcc]
            tables.append(Table(["Kernel", "Value", "Unit", "Statistic"],
                                [[k.title, f"{s.hpcc[k.key]:.4g}", k.unit, k.statistic] for k in kernels],
                                "hpcc's other kernels, from its summary block (sized from the largest N's memory)"))
            datasets["hpcc_kernels"] = [{"key": k.key, "kernel": k.title, "value": s.hpcc[k.key], "unit": k.unit,
                                      "statistic": k.statistic} for k in kernels]
        return View(tables, notes, datasets)

    def plots(self, runs):
        out = []
        for label, s in runs:
            for t in s.tests:
                if t.phases:
                    out.append(Plot("bar", f"Where the time went: {t.code} N={t.n} NB={t.nb} {t.p}x{t.q}"
                                           + (f" ({label})" if label else ""),
                                    ylabel="seconds (max over ranks)", labels=list(t.phases),
                                    values=[ph.max for ph in t.phases.values()]))
        tested = [(label, t) for label, s in runs for t in s.tests]
        traced = sorted((t for _, t in tested if t.trajectory), key=lambda t: -t.gflops)
        if traced:   # a tuning session's dozens of tests: the fastest TRACED, for a legible legend
            cut = f" (the {TRACED} fastest of {len(traced)} tests)" if len(traced) > TRACED else ""
            out.append(Plot("line", f"HPL's running rate as the factorisation goes on{cut}",
                            xlabel="fraction of the work done", ylabel="GFLOPS (flops so far / time so far)",
                            series={f"{t.code} N={t.n} NB={t.nb} {t.p}x{t.q} (test run {(t.run or '?')[:8]})":
                                    (t.trajectory.fraction, t.trajectory.gflops) for t in traced[:TRACED]}))
        by_n: dict[str, dict[int, float]] = {}
        for label, t in tested:
            best = by_n.setdefault(label, {})
            best[t.n] = max(best.get(t.n, 0.0), t.gflops)
        if len({n for best in by_n.values() for n in best}) > 1:
            out.append(Plot("line", "HPL GFLOPS vs N (best test at each N)", xlabel="N",
                            ylabel="GFLOPS (best test at each N)",
                            series={label: (sorted(best), [best[n] for n in sorted(best)])
                                    for label, best in by_n.items()}))
        return out


HPL: Hpl = FAMILIES["hpl"]   # the registered instance, for callers that run HPL directly
