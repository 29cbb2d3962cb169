"""`rmax bench blas`: every installed BLAS side by side, chosen by measurement: DGEMM at a
few square sizes for each, in rounds (every library once a round, in turn, one child dgemm
run each), and a short rmax-hpl run per library when rmax-hpl is installed. Installs
nothing. The parent run holds the comparison; children hold the data.

The libraries are compared on their rounds' medians, not on timed blocks: blocks of one run
share its minute of the machine's load, so a busy minute for one library and a quiet one
for the next would read as a "significant" difference (Welch's t-test on blocks gave opposite
verdicts a minute apart). Rounds spread the load over every library alike."""

from __future__ import annotations

import os
import statistics
from dataclasses import dataclass, field, replace

from rmax import blas
from rmax.families import dgemm
from rmax.bench.family import Family, RunContext, Summary, option, register
from rmax.bench.view import Figure, Plot, Table, View, figure
from rmax.errors import RmaxError, RunFailed
from rmax.params import Count
from rmax.stats import MIN_CHANGE

MEDIAN = "median over rounds of each round's median of timed DGEMM blocks"


@dataclass
class BlasOptions:
    # The reference BLAS is ~50x slower than OpenBLAS, so sizes stay moderate.
    sizes: tuple[int, ...] = option((256, 1024), "Square DGEMM orders, comma-separated.", type=dgemm.DIMS,
                                    quick=(256, 512))
    hpl: bool = option(True, "Skip the short rmax-hpl run per library.", flag="--no-hpl")
    rounds: int = option(3, "Rounds: every library is measured once a round, in turn.", type=Count(2, 50))
    budget: float = option(0.3, "Seconds per DGEMM point and round.", quick=0.05, cli=False)
    hpl_n: int = option(2000, "N of the HPL run per library.", quick=1000, cli=False)


@dataclass
class BlasRate:
    n: int
    median: float               # GFLOPS: the median of `rounds`
    rounds: list[float] = field(default_factory=list)   # each round's median


@dataclass
class BlasHpl:
    status: str
    run: str | None = None
    n: int | None = None
    gflops: float | None = None
    time_s: float | None = None
    passed: int | None = None
    error: str | None = None


@dataclass
class Versus:
    """One library against the fastest at the largest size: a paired t-test on the rounds'
    medians, Holm-adjusted over the libraries, significant only when also >= MIN_CHANGE."""

    variant: str
    slower_by: float
    p_value: float              # Holm-adjusted
    significant: bool


@dataclass
class BlasRow:
    name: str
    variant: str
    path: str
    status: str
    runs: list[str] = field(default_factory=list)   # the child dgemm runs, one a round
    version: str | None = None
    loaded: str | None = None
    dgemm: list[BlasRate] = field(default_factory=list)
    error: str | None = None
    hpl: BlasHpl | None = None

    def rate(self, n: int) -> tuple[int, BlasRate] | None:
        return next(((i, r) for i, r in enumerate(self.dgemm) if r.n == n), None)


@dataclass
class BlasSummary(Summary):
    SCHEMA = "rmax.blas/3"
    libraries: list[BlasRow]
    sizes: list[int]
    threads: int = 1
    compared_at: int | None = None          # the size the libraries are compared at (the largest)
    fastest: str | None = None
    versus: list[Versus] = field(default_factory=list)
    hpl_n: int | None = None
    hpl_note: str | None = None
    rounds: int = 0
    unit: str = "GFLOPS"
    statistic: str = MEDIAN


def libraries() -> list[blas.BlasLib]:
    """Installed BLAS libraries, one per distinct file."""
    seen, out = set(), []
    for lib in blas.installed():
        real = os.path.realpath(lib.path)
        if real not in seen:
            seen.add(real)
            out.append(lib)
    return out


def hpl_available() -> tuple[bool, str | None]:
    try:
        from rmax.native import executable

        executable("rmax-hpl")
    except RmaxError as e:
        return False, f"rmax-hpl not available ({e}); HPL comparison skipped"
    return True, None


def _hpl(lib: blas.BlasLib, n: int, ctx: RunContext) -> BlasHpl:
    from rmax.families import run
    from rmax.families.hpl import HPL
    from rmax.hpl.dat import HplConfig
    from rmax.launch import LaunchSpec

    o = HPL.options(config=HplConfig(ns=[n], nbs=[192], grids=[(1, 1)]), engine="rmax", blas=lib.to_dict())
    spec = LaunchSpec(program=[], np=1, env=blas.env_for(lib), blas_threads=1)
    try:
        rec = run(HPL, o, RunContext(store=ctx.store, parent=ctx.parent, label=f"blas {lib.variant}", spec=spec,
                                     launcher="local", timeout=300))
    except RmaxError as e:
        return BlasHpl("failed", error=str(e))
    s = HPL.load(rec)
    best = s.best()
    return BlasHpl(rec.status, rec.id, n, best.gflops if best else None, best.time_s if best else None, s.passed)


def significance(rows: list[BlasRow], n: int) -> tuple[str | None, list[Versus]]:
    """(the library of the highest median at size n, each other one against it: a paired t-test
    on the rounds' medians (round by round, the load of a round cancels), Holm-adjusted over the
    others, and a change of at least MIN_CHANGE)."""
    from rmax.stats import differ_paired, holm

    ok = [(r, r.rate(n)[1]) for r in rows if r.rate(n)]
    if not ok:
        return None, []
    best, top = max(ok, key=lambda rr: rr[1].median)
    others = [(r, rate) for r, rate in ok if r is not best]
    ps = holm([differ_paired(top.rounds, rate.rounds)[1] for _, rate in others])
    out = []
    for (r, rate), p in zip(others, ps):
        slower = 1 - rate.median / top.median
        out.append(Versus(r.variant, slower, p, bool(p < 0.05 and slower >= MIN_CHANGE)))
    return best.variant, out


@register
class BlasCompare(Family):
    """Every installed BLAS side by side: DGEMM GFLOPS, and a short rmax-hpl run when it exists."""

    name = "blas"
    native = None   # its options are its own: it runs dgemm and rmax-hpl per library
    title = "every installed BLAS side by side"
    Options = BlasOptions
    Summary = BlasSummary
    example = "rmax bench blas --quick"

    def check(self, o, ctx):
        if not libraries():
            raise RmaxError("no BLAS library found", hint="apt-get install libopenblas0-pthread (or libblis4-pthread)")

    def execute(self, o, ctx: RunContext):
        from rmax.families import get, run
        from rmax.store import open_store

        libs = libraries()
        has_hpl, hpl_note = hpl_available() if o.hpl else (False, "HPL comparison not requested")
        store = ctx.store or open_store()
        try:
            params = {**self.params(o, ctx), "libraries": [lib.to_dict() for lib in libs]}
            with store.start_run("blas", params=params, hosts=[os.uname().nodename], parent=ctx.parent,
                                 label=ctx.label) as top:
                inner = RunContext(store=store, parent=top.id, timeout=ctx.timeout or 600, on_stdout=ctx.on_stdout)
                rows = [BlasRow(lib.name, lib.variant, lib.path, "failed") for lib in libs]
                medians: dict[tuple[str, int], list[float]] = {}
                samples: dict[str, list[float]] = {}
                for rnd in range(o.rounds):
                    for lib, row in zip(libs, rows):
                        if row.error:
                            continue    # a library that failed once is not tried again
                        if ctx.on_stdout:
                            ctx.on_stdout(f"{lib.variant} (round {rnd + 1} of {o.rounds})")
                        try:
                            opts = get("dgemm").options(sizes=tuple(o.sizes), budget=o.budget, sweep="square",
                                                        blas=lib.path)
                            rec = run("dgemm", opts, replace(inner, label=f"blas {lib.variant} round {rnd + 1}"))
                        except RunFailed as e:
                            row.error, row.status = str(e), "failed"
                            continue
                        row.runs.append(rec.id)
                        if rec.status != "ok":
                            # a wrong answer (or no point measured) is no rate to compare
                            row.error, row.status = f"round {rnd + 1}: dgemm run {rec.id[:8]} is {rec.status}", rec.status
                            continue
                        d = dgemm.DgemmSummary.load(rec.summary)
                        row.status, row.version, row.loaded = "ok", d.blas.version, d.blas.path
                        for pt in d.square:
                            medians.setdefault((lib.variant, pt.n), []).append(pt.median)
                        samples.update({f"{lib.variant}/round {rnd + 1}/{k}": v for k, v in rec.samples.items()})
                for lib, row in zip(libs, rows):
                    row.dgemm = [] if row.error else [
                        BlasRate(n, float(statistics.median(medians[(lib.variant, n)])), medians[(lib.variant, n)])
                        for n in o.sizes if (lib.variant, n) in medians]
                    if has_hpl and not row.error:
                        row.hpl = _hpl(lib, o.hpl_n, inner)
                fastest, versus = significance(rows, max(o.sizes))
                summary = BlasSummary(rows, list(o.sizes), 1, max(o.sizes), fastest, versus,
                                      o.hpl_n if has_hpl else None, hpl_note, o.rounds)
                top.update(summary=summary.to_dict(), samples=samples, headline=self.list_line(summary))
                if all(r.status != "ok" for r in rows):
                    top.finish("failed", "no BLAS library ran DGEMM successfully")
            return store.get(top.id)
        finally:
            if ctx.store is None:
                store.close()

    def headline(self, s: BlasSummary) -> list[Figure]:
        for i, r in enumerate(s.libraries):
            got = r.rate(s.compared_at) if r.variant == s.fastest and s.compared_at else None
            if got:
                f = figure(s, ("libraries", i, "dgemm", got[0], "median"), "highest",
                           f"DGEMM n={s.compared_at}, highest of {len(s.libraries)} BLAS ({r.variant}, 1 thread)",
                           "GFLOPS", MEDIAN)
                return [f] if f else []
        return []

    def metrics(self, s: BlasSummary) -> list[Figure]:
        out = []
        for i, r in enumerate(s.libraries):
            for j, rate in enumerate(r.dgemm):
                out.append(figure(s, ("libraries", i, "dgemm", j, "median"), f"{r.variant}.{rate.n}",
                                  f"DGEMM n={rate.n} with {r.variant} (1 thread)", "GFLOPS", MEDIAN,
                                  repeats=("libraries", i, "dgemm", j, "rounds")))
        return [f for f in out if f]

    def view(self, s: BlasSummary) -> View:
        def num(v):
            return f"{v:.2f}" if v is not None else "—"

        cols = ["BLAS", "Version"] + [f"DGEMM n={n} GFLOPS" for n in s.sizes] + (
            [f"HPL N={s.hpl_n} GFLOPS (one run)"] if s.hpl_n else []) + [f"vs highest at n={s.compared_at}"]
        versus = {v.variant: v for v in s.versus}
        rows = []
        for r in s.libraries:
            row = [r.variant, r.version or "—"] + [num(r.rate(n)[1].median) if r.rate(n) else "—" for n in s.sizes]
            if s.hpl_n:
                h = r.hpl
                row.append(num(h.gflops) if h and h.status == "ok" else (h.status if h else "—"))
            v = versus.get(r.variant)
            if s.fastest == r.variant:
                verdict = "highest median"
            elif v is None:
                verdict = r.status
            elif v.significant:
                verdict = f"{100 * v.slower_by:.0f}% slower (p={v.p_value:.2g})"
            else:
                verdict = f"not significantly slower (p={v.p_value:.2g})"
            row.append(verdict)
            rows.append(row)
        t = Table(cols, rows, f"{s.threads} thread; DGEMM GFLOPS: {MEDIAN} ({s.rounds} rounds, the libraries in turn)",
                  left=2)
        notes = [f"slower: a paired t-test on the rounds' medians (log ratios, round by round), Holm-adjusted over the {len(s.versus)} other "
                 f"libraries, and at least {100 * MIN_CHANGE:.0f}% slower"] if s.versus else []
        notes += [f"{r.variant}: {r.error}" for r in s.libraries if r.error]
        notes += [f"Note: {s.hpl_note}"] if s.hpl_note else []
        data = [{"variant": r.variant, "version": r.version, "n": rate.n, "median_GFLOPS": rate.median,
                 "round_medians_GFLOPS": rate.rounds, "runs": r.runs}
                for r in s.libraries for rate in r.dgemm]
        return View([t], notes, {"blas": data})

    def plots(self, runs):
        labels, values = [], []
        for label, s in runs:
            for r in s.libraries:
                for rate in r.dgemm:
                    labels.append(f"{label} {r.variant} n={rate.n}")
                    values.append(rate.median)
        return [Plot("bar", "DGEMM per BLAS", ylabel="GFLOPS (median)", labels=labels, values=values)] if labels else []
