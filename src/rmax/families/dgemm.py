"""dgemm: the BLAS's DGEMM rate vs square size, vs k at fixed m = n, and at given shapes
m x n x k such as HPL's trailing update (native/node/dgemm.c), with any installed BLAS chosen
per run."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from functools import partial

import click

from rmax import blas
from rmax.bench.family import Family, Summary, SurveyPlan, option, register
from rmax.bench.node_kernel import check_fits, invalid
from rmax.bench.runner import Parsed
from rmax.bench.view import Figure, Plot, Table, View, figure
from rmax.errors import RmaxError
from rmax.native import executable
from rmax.params import Count, Number, NumberList, Seconds, Shapes

MEDIAN = "median of timed blocks"
# HPL's trailing update is an (m x NB) by (NB x n) DGEMM (netlib HPL's TUNING notes), so NB
# should be a k at which DGEMM runs near its best: the smallest such k is the suggestion.
NB_WITHIN = 0.97

# Matrix orders: at most 2^20 (the memory check refuses what does not fit long before).
DIMS = NumberList(1, 1 << 20, integer=True, rule="matrix dimensions must be greater than zero")
DIM = Number(1, 1 << 20, integer=True, rule="matrix dimensions must be greater than zero")
MAX_SHAPES = 64     # native/node/dgemm.c's limit
SHAPE_CAP = 8192    # the larger of m and n measured for HPL's shape (hpl_update_shape)


def hpl_update_shape(n: int, nb: int, p: int, q: int) -> tuple[int, int, int]:
    """(m, n, k) of one rank's typical DGEMM in HPL's trailing update, an (m x NB) by (NB x n)
    product (netlib HPL's TUNING notes) on the local trailing matrix. At step j the trailing
    order is N - j NB; weighting each step by its flops (~ x^2 at order x), the mean order is
    (integral of x^3 over [0, N]) / (integral of x^2) = 3N/4, dealt over P rows and Q columns.
    m and n are scaled down together until the larger is at most SHAPE_CAP: past a few thousand,
    DGEMM's rate no longer depends on them (the BLAS works on cache-sized blocks of A and B: Goto
    and van de Geijn, "Anatomy of high-performance matrix multiplication", 2008), while the time
    and memory of measuring them grow as m n (a tuned N fills most of memory)."""
    m, n_ = 3 * n / (4 * p), 3 * n / (4 * q)
    shrink = max(1.0, max(m, n_) / SHAPE_CAP)
    return max(1, round(m / shrink)), max(1, round(n_ / shrink)), nb


@dataclass
class DgemmOptions:
    blas: str | None = option(None, "openblas, blis, atlas, reference, or a path to a BLAS library.",
                              metavar="NAME|PATH", show="the system's libblas.so.3")
    sweep: str = option("both", "The square sweep, the k sweep, both, or only the --shapes.",
                        type=click.Choice(["square", "k", "both", "shape"]))
    sizes: tuple[int, ...] = option((128, 256, 512, 1024, 2048), "Square orders n, comma-separated.", type=DIMS,
                                    quick=(256, 1024))
    k: tuple[int, ...] = option((32, 64, 96, 128, 192, 256, 384, 512), "Inner dimensions k at m = n = --mn.",
                                type=DIMS, quick=(64, 128, 256))
    mn: int = option(2048, "m = n of the k sweep.", type=DIM, quick=1024)
    shapes: tuple[tuple[int, int, int], ...] = option(
        (), "Shapes MxNxK measured as well (HPL's trailing update is about (3N/4P)x(3N/4Q)xNB).",
        type=Shapes(1 << 20, MAX_SHAPES))
    threads: int = option(1, "BLAS threads.", type=Count(1, 4096))
    budget: float = option(0.5, "Seconds per point.", type=Seconds(0.001, 3600, lo_open=False), quick=0.1)


@dataclass
class DgemmPoint:
    m: int
    n: int
    k: int
    median: float               # GFLOPS
    min: float
    max: float
    mean: float
    sd: float
    n_samples: int
    ci95: list[float] | None = None


@dataclass
class BlasUsed:
    """The BLAS the kernel really loaded (rmax.blas.loaded_brief)."""

    name: str | None = None
    version: str | None = None
    path: str | None = None
    config: str | None = None


SWEEPS = ("square", "k", "shape")


@dataclass
class DgemmSummary(Summary):
    SCHEMA = "rmax.dgemm/3"
    square: list[DgemmPoint]
    k: list[DgemmPoint]
    threads: int
    blas: BlasUsed = field(default_factory=BlasUsed)
    nb_suggested: int | None = None
    unit: str = "GFLOPS"
    statistic: str = MEDIAN
    shape: list[DgemmPoint] = field(default_factory=list)    # the --shapes, in the order given

    def best(self) -> tuple[tuple, DgemmPoint] | None:
        """(summary path, point) of the fastest point of the square and k sweeps."""
        found = [(("square", i), p) for i, p in enumerate(self.square)] + [(("k", i), p) for i, p in enumerate(self.k)]
        return max(found, key=lambda pp: pp[1].median, default=None)

    def at_shape(self, m: int, n: int, k: int) -> tuple[tuple, DgemmPoint] | None:
        """(summary path, point) of the shape point with this k whose m and n are nearest m, n
        (by the sum of their log ratios); None when no shape point has this k."""
        found = [(("shape", i), p) for i, p in enumerate(self.shape) if p.k == k and p.median > 0]
        return min(found, key=lambda pp: abs(math.log(pp[1].m / m)) + abs(math.log(pp[1].n / n)), default=None)


def best_nb(k_points: list[DgemmPoint], within: float = NB_WITHIN) -> int | None:
    """The smallest k whose rate is within `within` of the best k's."""
    if not k_points:
        return None
    top = max(p.median for p in k_points)
    return min(p.k for p in k_points if p.median >= within * top)


def _key(r: dict) -> str:
    return f"{r['sweep']}/{r['m']}x{r['n']}x{r['k']}"


def _threads(n: int) -> str:
    return f"{n} thread{'s' if n != 1 else ''}"


def blas_env(name_or_path: str | None) -> tuple[dict, dict | None]:
    """(environment selecting the BLAS, its description) — nothing when the system default is wanted."""
    if not name_or_path:
        return {}, None
    lib = blas.resolve(name_or_path)
    return blas.env_for(lib), lib.to_dict()


@register
class Dgemm(Family):
    """DGEMM GFLOPS vs square size, and vs k at fixed m = n (the k where DGEMM runs near its best
    is a good NB for HPL, whose trailing update is an (m x NB) by (NB x n) product)."""

    name = "dgemm"
    native = ("rmax-node", "dgemm")
    title = "BLAS DGEMM rate vs size and vs inner dimension k"
    Options = DgemmOptions
    Summary = DgemmSummary
    survey = SurveyPlan("DGEMM vs size and k", 0.10, 28)
    example = "rmax bench dgemm --blas blis --sweep square"

    def check(self, o, ctx):
        blas_env(o.blas)       # an unknown or non-BLAS library is refused here, before a run exists
        for n in (o.sizes if o.sweep in ("square", "both") else ()):
            check_fits(f"--sizes {n}: three {n}x{n} matrices", n * n * 8, 3)
        for k in (o.k if o.sweep in ("k", "both") else ()):
            check_fits(f"--k {k} at m = n = {o.mn}: the matrices", (2 * o.mn * k + o.mn * o.mn) * 8)
        if o.sweep == "shape" and not o.shapes:
            raise RmaxError("--sweep shape needs --shapes MxNxK,...")
        for m, n, k in o.shapes:
            check_fits(f"--shapes {m}x{n}x{k}: the matrices", (m * k + k * n + m * n) * 8)

    def survey_options(self, o, hpl):
        # The survey's DGEMM bound is taken at the shape of its HPL run's trailing update.
        return dataclasses.replace(o, shapes=(hpl_update_shape(*hpl),))

    def argv(self, o):
        return [executable("rmax-node"), "dgemm", "--json", "-", "--sweep", o.sweep,
                "--sizes", ",".join(map(str, o.sizes)), "--k", ",".join(map(str, o.k)), "--mn", str(o.mn),
                "--budget", str(o.budget)] + (["--shapes", ",".join(f"{m}x{n}x{k}" for m, n, k in o.shapes)]
                                              if o.shapes else [])

    def env(self, o):
        return blas_env(o.blas)[0]

    def blas_threads(self, o):
        return o.threads

    def timeout(self, o):
        return 900.0

    def params(self, o, ctx):
        return {**super().params(o, ctx), "blas_selected": blas_env(o.blas)[1]}

    def parser(self, o, ctx):
        used = blas.loaded_brief(self.env(o))
        return partial(self.parse, threads=o.threads,
                       blas=BlasUsed(*(used.get(f.name) for f in dataclasses.fields(BlasUsed))))

    def parse(self, records, threads: int = 1, blas: BlasUsed | None = None):
        recs = [r for r in records if r.get("schema") == "rmax.dgemm/1"]
        points: dict[str, list[DgemmPoint]] = {sweep: [] for sweep in SWEEPS}
        for r in recs:
            s = r["summary"]
            points[r["sweep"]].append(DgemmPoint(r["m"], r["n"], r["k"], s["median"], s["min"], s["max"], s["mean"],
                                                 s["sd"], s["n"], s.get("ci95")))
        summary = DgemmSummary(points["square"], points["k"], threads, blas or BlasUsed(), best_nb(points["k"]),
                               shape=points["shape"])
        err = invalid(recs, _key)
        return Parsed(summary, {_key(r): r["samples"] for r in recs}, "invalid" if err else "ok", err)

    def headline(self, s: DgemmSummary) -> list[Figure]:
        found = s.best()
        f = None
        if found:
            path, p = found
            f = figure(s, (*path, "median"), "best", f"DGEMM per process ({_threads(s.threads)}, m={p.m} k={p.k})",
                       "GFLOPS", f"{MEDIAN}, best size", role="dgemm_node",
                       at=", ".join(f"{sweep} {'/'.join(str(q.m if sweep == 'square' else q.k) for q in getattr(s, sweep))}"
                                    for sweep in ("square", "k") if getattr(s, sweep)))
        shapes = [figure(s, ("shape", i, "median"), f"shape.{p.m}x{p.n}x{p.k}",
                         f"DGEMM per process at m={p.m} n={p.n} k={p.k} ({_threads(s.threads)})", "GFLOPS", MEDIAN,
                         role="dgemm_shape") for i, p in enumerate(s.shape)]
        return [x for x in (f, *shapes) if x]

    def metrics(self, s: DgemmSummary) -> list[Figure]:
        out = []
        for sweep in SWEEPS:
            for i, p in enumerate(getattr(s, sweep)):
                out.append(figure(s, (sweep, i, "median"), f"{sweep}.{p.m}x{p.n}x{p.k}",
                                  f"DGEMM m={p.m} n={p.n} k={p.k} ({_threads(s.threads)})", "GFLOPS", MEDIAN))
        return [f for f in out if f]

    def view(self, s: DgemmSummary) -> View:
        rows = [[sweep, str(p.m), str(p.n), str(p.k), f"{p.median:.2f}", f"{p.min:.2f}", f"{p.max:.2f}",
                 str(p.n_samples)] for sweep in SWEEPS for p in getattr(s, sweep)]
        t = Table(["Sweep", "m", "n", "k", "Median GFLOPS", "Min", "Max", "n samples"], rows,
                  f"BLAS {s.blas.name or 'unknown'} {s.blas.version or ''}, {_threads(s.threads)}".replace("  ", " "))
        notes = []
        if s.nb_suggested:
            notes.append(f"NB suggested by the k sweep: {s.nb_suggested} (the smallest k within "
                         f"{100 - NB_WITHIN * 100:.0f}% of the best k's median rate)")
        data = [{"sweep": sweep, **{k: v for k, v in dataclasses.asdict(p).items() if k != "ci95"}}
                for sweep in SWEEPS for p in getattr(s, sweep)]
        return View([t], notes, {"dgemm": data})

    def plots(self, runs):
        square, square_band, ks, k_band = {}, {}, {}, {}   # bands: the min-max of each point's timed blocks
        for label, s in runs:
            if s.square:
                name = f"{label} {s.blas.name or ''}".strip()
                square[name] = ([p.m for p in s.square], [p.median for p in s.square])
                square_band[name] = ([p.min for p in s.square], [p.max for p in s.square])
            if s.k:
                name = f"{label} m=n={s.k[0].m}"
                ks[name] = ([p.k for p in s.k], [p.median for p in s.k])
                k_band[name] = ([p.min for p in s.k], [p.max for p in s.k])
        out = []
        if square:
            out.append(Plot("line", "DGEMM vs size", "m = n = k", "GFLOPS (median; band: min-max)", square, logx=True,
                            bands=square_band))
        if ks:
            out.append(Plot("line", "DGEMM vs k (NB candidates for HPL)", "inner dimension k",
                            "GFLOPS (median; band: min-max)", ks, logx=True, bands=k_band))
        return out
