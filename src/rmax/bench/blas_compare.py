"""`rmax bench blas`: every installed BLAS side by side, chosen by measurement: DGEMM at a
few square sizes for each (one child dgemm run per library), and a short rmax-hpl run per
library when rmax-hpl is installed. Installs nothing. The parent run holds the comparison;
children hold the data."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace

from rmax import blas
from rmax.bench import dgemm
from rmax.bench.family import Family, RunContext, Summary, option, register
from rmax.bench.view import Figure, Plot, Table, View, figure
from rmax.errors import RmaxError, RunFailed

MEDIAN = "median of timed DGEMM blocks"


@dataclass
class BlasOptions:
    # The reference BLAS is ~50x slower than OpenBLAS, so sizes stay moderate.
    sizes: tuple[int, ...] = option((256, 1024), "Square DGEMM orders, comma-separated.", type=dgemm.DIMS,
                                    quick=(256, 512))
    hpl: bool = option(True, "Skip the short rmax-hpl run per library.", flag="--no-hpl")
    budget: float = option(0.3, "Seconds per DGEMM point.", quick=0.05, cli=False)
    hpl_n: int = option(2000, "N of the HPL run per library.", quick=1000, cli=False)


@dataclass
class BlasRate:
    n: int
    median: float               # GFLOPS


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
    """One library against the fastest at the largest size (Welch's t-test)."""

    variant: str
    slower_by: float
    p_value: float
    significant: bool


@dataclass
class BlasRow:
    name: str
    variant: str
    path: str
    status: str
    run: str | None = None
    version: str | None = None
    loaded: str | None = None
    dgemm: list[BlasRate] = field(default_factory=list)
    error: str | None = None
    hpl: BlasHpl | None = None

    def rate(self, n: int) -> tuple[int, BlasRate] | None:
        return next(((i, r) for i, r in enumerate(self.dgemm) if r.n == n), None)


@dataclass
class BlasSummary(Summary):
    SCHEMA = "rmax.blas/2"
    libraries: list[BlasRow]
    sizes: list[int]
    threads: int = 1
    compared_at: int | None = None          # the size the libraries are compared at (the largest)
    fastest: str | None = None
    versus: list[Versus] = field(default_factory=list)
    hpl_n: int | None = None
    hpl_note: str | None = None
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
    from rmax.bench.family import run
    from rmax.bench.hpl import HPL
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


def significance(rows: list[BlasRow], samples: dict, n: int) -> tuple[str | None, list[Versus]]:
    """(the fastest library at size n, each other one against it: Welch's t-test)."""
    from rmax.stats import differ_significantly

    key = f"square/{n}x{n}x{n}"
    ok = [(r, r.rate(n)[1].median) for r in rows if r.rate(n)]
    if not ok:
        return None, []
    best, top = max(ok, key=lambda rr: rr[1])
    out = []
    for r, rate in ok:
        if r is not best:
            sig, p = differ_significantly(samples.get(f"{best.variant}/{key}", []), samples.get(f"{r.variant}/{key}", []))
            out.append(Versus(r.variant, 1 - rate / top, p, sig))
    return best.variant, out


@register
class BlasCompare(Family):
    """Every installed BLAS side by side: DGEMM GFLOPS, and a short rmax-hpl run when it exists."""

    name = "blas"
    title = "every installed BLAS side by side"
    Options = BlasOptions
    Summary = BlasSummary
    example = "rmax bench blas --quick"

    def check(self, o, ctx):
        if not libraries():
            raise RmaxError("no BLAS library found", hint="apt-get install libopenblas0-pthread (or libblis4-pthread)")

    def execute(self, o, ctx: RunContext):
        from rmax.bench.family import get, run
        from rmax.store import open_store

        libs = libraries()
        has_hpl, hpl_note = hpl_available() if o.hpl else (False, "HPL comparison not requested")
        store = ctx.store or open_store()
        try:
            params = {**self.params(o, ctx), "libraries": [lib.to_dict() for lib in libs]}
            with store.start_run("blas", params=params, hosts=[os.uname().nodename], parent=ctx.parent,
                                 label=ctx.label) as top:
                inner = RunContext(store=store, parent=top.id, timeout=ctx.timeout or 600, on_stdout=ctx.on_stdout)
                rows, samples = [], {}
                for lib in libs:
                    if ctx.on_stdout:
                        ctx.on_stdout(lib.variant)
                    row = BlasRow(lib.name, lib.variant, lib.path, "failed")
                    try:
                        opts = get("dgemm").options(sizes=tuple(o.sizes), budget=o.budget, sweep="square",
                                                    blas=lib.path)
                        rec = run("dgemm", opts, replace(inner, label=f"blas {lib.variant}"))
                        d = dgemm.DgemmSummary.load(rec.summary)
                        row.status, row.run, row.version, row.loaded = rec.status, rec.id, d.blas.version, d.blas.path
                        row.dgemm = [BlasRate(p.n, p.median) for p in d.square]
                        samples.update({f"{lib.variant}/{k}": v for k, v in rec.samples.items()})
                    except RunFailed as e:
                        row.error = str(e)
                    if has_hpl:
                        row.hpl = _hpl(lib, o.hpl_n, inner)
                    rows.append(row)
                fastest, versus = significance(rows, samples, max(o.sizes))
                summary = BlasSummary(rows, list(o.sizes), 1, max(o.sizes), fastest, versus,
                                      o.hpl_n if has_hpl else None, hpl_note)
                top.update(summary=summary.to_dict(), samples=samples)
                if all(r.status != "ok" for r in rows):
                    top.finish("failed", "no BLAS library ran DGEMM successfully")
            return store.get(top.id)
        finally:
            if ctx.store is None:
                store.close()

    def metrics(self, s: BlasSummary) -> list[Figure]:
        out = []
        for i, r in enumerate(s.libraries):
            for j, rate in enumerate(r.dgemm):
                out.append(figure(s, ("libraries", i, "dgemm", j, "median"), f"{r.variant}.{rate.n}",
                                  f"DGEMM n={rate.n} with {r.variant} (1 thread)", "GFLOPS", MEDIAN))
        return [f for f in out if f]

    def view(self, s: BlasSummary) -> View:
        def num(v):
            return f"{v:.2f}" if v is not None else "—"

        cols = ["BLAS", "Version"] + [f"DGEMM n={n} GFLOPS" for n in s.sizes] + (
            [f"HPL N={s.hpl_n} GFLOPS"] if s.hpl_n else []) + ["vs fastest"]
        versus = {v.variant: v for v in s.versus}
        rows = []
        for r in s.libraries:
            row = [r.variant, r.version or "—"] + [num(r.rate(n)[1].median) if r.rate(n) else "—" for n in s.sizes]
            if s.hpl_n:
                h = r.hpl
                row.append(num(h.gflops) if h and h.status == "ok" else (h.status if h else "—"))
            v = versus.get(r.variant)
            row.append("fastest" if s.fastest == r.variant else
                       (f"-{100 * v.slower_by:.0f}% (p={v.p_value:.2g})" if v else r.status))
            rows.append(row)
        t = Table(cols, rows, f"{s.threads} thread, median GFLOPS", left=2)
        notes = [f"Note: {s.hpl_note}"] if s.hpl_note else []
        data = [{"variant": r.variant, "version": r.version, "n": rate.n, "median_GFLOPS": rate.median}
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
