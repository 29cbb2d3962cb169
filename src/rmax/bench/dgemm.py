"""dgemm: the BLAS's DGEMM rate vs square size and vs k at fixed m = n
(native/node/dgemm.c), with any installed BLAS chosen per run."""

from __future__ import annotations

from rmax import blas
from rmax.bench.node_kernel import check_fits, invalid, run_node
from rmax.bench.runner import Parsed
from rmax.errors import RmaxError
from rmax.native import executable
from rmax.store.runs import RunRecord

SCHEMA = "rmax.dgemm/1"
# (square sizes, k values, m = n of the k sweep, seconds per point)
PLAN = {"default": ([128, 256, 512, 1024, 2048], [32, 64, 96, 128, 192, 256, 384, 512], 2048, 0.5),
        "quick": ([256, 1024], [64, 128, 256], 1024, 0.1)}


def argv(sizes: list[int], ks: list[int], mn: int, budget: float, sweep: str = "both") -> list[str]:
    return [executable("rmax-node"), "dgemm", "--json", "-", "--sweep", sweep, "--sizes", ",".join(map(str, sizes)),
            "--k", ",".join(map(str, ks)), "--mn", str(mn), "--budget", str(budget)]


def key(r: dict) -> str:
    return f"{r['sweep']}/{r['m']}x{r['n']}x{r['k']}"


def best_nb(k_points: list[dict], within: float = 0.97) -> int | None:
    """Seed 02's rule: the smallest k whose rate is within `within` of the best k."""
    if not k_points:
        return None
    top = max(p["median"] for p in k_points)
    return min(p["k"] for p in k_points if p["median"] >= within * top)


def parse(records: list[dict]) -> Parsed:
    recs = [r for r in records if r.get("schema") == SCHEMA]
    points = {"square": [], "k": []}
    for r in recs:
        s = r["summary"]
        points[r["sweep"]].append({"m": r["m"], "n": r["n"], "k": r["k"], "median": s["median"], "min": s["min"],
                                   "max": s["max"], "mean": s["mean"], "sd": s["sd"], "n_samples": s["n"],
                                   "ci95": s.get("ci95")})
    summary = {"unit": "GFLOPS", "statistic": "median of timed blocks", **points,
               "nb_suggested": best_nb(points["k"])}
    samples = {key(r): r["samples"] for r in recs}
    err = invalid(recs, key)
    return Parsed(summary, samples, "invalid" if err else "ok", err)


def check_orders(sizes: list[int], ks: list[int], mn: int) -> None:
    for what, vals in (("--sizes", sizes), ("--k", ks), ("--mn", [mn])):
        for v in vals:
            if v <= 0:
                raise RmaxError(f"{what}: matrix dimensions must be greater than zero, not {v}")
    for n in sizes:
        check_fits(f"--sizes {n}: three {n}x{n} matrices", n * n * 8, 3)
    for k in ks:
        check_fits(f"--k {k} at m = n = {mn}: the matrices", (2 * mn * k + mn * mn) * 8)


def blas_env(name_or_path: str | None) -> tuple[dict, dict | None]:
    """(environment selecting the BLAS, its description) — nothing when the system default is wanted."""
    if not name_or_path:
        return {}, None
    lib = blas.resolve(name_or_path)
    return blas.env_for(lib), lib.to_dict()


def run(quick: bool = False, *, sizes: list[int] | None = None, ks: list[int] | None = None, mn: int | None = None,
        budget: float | None = None, sweep: str = "both", blas_name: str | None = None, threads: int = 1,
        store=None, parent: str | None = None, label: str | None = None,
        spec=None, launcher: str | None = None, timeout: float = 900.0,
        on_stdout=None) -> RunRecord:
    p_sizes, p_ks, p_mn, p_budget = PLAN["quick" if quick else "default"]
    sizes, ks, mn, budget = sizes or p_sizes, ks or p_ks, mn or p_mn, budget or p_budget
    check_orders(sizes if sweep != "k" else [], ks if sweep != "square" else [], mn)
    env, chosen = blas_env(blas_name)
    params = {"sizes": sizes, "k": ks, "mn": mn, "budget": budget, "sweep": sweep, "threads": threads,
              "blas_requested": blas_name, "blas_selected": chosen, "blas_loaded": blas.loaded(env), "quick": quick}
    return run_node("dgemm", argv(sizes, ks, mn, budget, sweep), params, parse, env=env, blas_threads=threads,
                    store=store, parent=parent, label=label, spec=spec, launcher=launcher,
                    timeout=timeout, on_stdout=on_stdout)
