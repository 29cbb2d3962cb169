"""`rmax bench blas`: every installed BLAS side by side, as seeds 01 and 02 chose
theirs by measurement: DGEMM at a few square sizes for each (one child dgemm run
per library), and a short rmax-hpl run per library when rmax-hpl is installed.
Installs nothing. The parent run holds the comparison; children hold the data."""

from __future__ import annotations

import os

from rmax import blas
from rmax.bench import dgemm
from rmax.errors import RmaxError, RunFailed
from rmax.store import open_store
from rmax.store.runs import RunRecord

# (square sizes, seconds per point, HPL N): the reference BLAS is ~50x slower than OpenBLAS,
# so sizes stay moderate.
PLAN = {"default": ([256, 1024], 0.3, 2000), "quick": ([256, 512], 0.05, 1000)}


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
        from rmax.hpl.dat import HplConfig  # noqa: F401
        from rmax.hpl.run import run_hpl  # noqa: F401
    except (RmaxError, ImportError) as e:
        return False, f"rmax-hpl not available ({e}); HPL comparison skipped"
    return True, None


def _hpl(lib: blas.BlasLib, n: int, store, parent: str) -> dict:
    from rmax.hpl.dat import HplConfig
    from rmax.hpl.run import run_hpl
    from rmax.launch import LaunchSpec

    cfg = HplConfig(ns=[n], nbs=[192], grids=[(1, 1)])
    spec = LaunchSpec(program=[], np=1, env=blas.env_for(lib), blas_threads=1)
    try:
        out = run_hpl(cfg, spec, store, engine="rmax", launcher="local", timeout=300, parent=parent,
                      label=f"blas {lib.variant}", blas=lib.to_dict())
    except RmaxError as e:
        return {"status": "failed", "error": str(e)}
    best = out.run.summary.get("best", {})
    return {"status": out.run.status, "run": out.run.id, "gflops": best.get("gflops"), "n": n,
            "time_s": best.get("time_s"), "passed": out.run.summary.get("passed")}


def run(quick: bool = False, *, sizes: list[int] | None = None, budget: float | None = None,
        hpl: bool = True, store=None, parent: str | None = None, on_progress=None) -> RunRecord:
    p_sizes, p_budget, hpl_n = PLAN["quick" if quick else "default"]
    sizes, budget = sizes or p_sizes, budget or p_budget
    libs = libraries()
    if not libs:
        raise RmaxError("no BLAS library found", hint="apt-get install libopenblas0-pthread (or libblis4-pthread)")
    has_hpl, hpl_note = hpl_available() if hpl else (False, "HPL comparison not requested")
    own = store is None
    store = store or open_store()
    try:
        params = {"sizes": sizes, "budget": budget, "quick": quick, "libraries": [lib.to_dict() for lib in libs],
                  "hpl_n": hpl_n if has_hpl else None}
        with store.start_run("blas", params=params, hosts=[os.uname().nodename], parent=parent) as top:
            rows, samples = [], {}
            for lib in libs:
                if on_progress:
                    on_progress(lib.variant)
                row = {"name": lib.name, "variant": lib.variant, "path": lib.path}
                try:
                    rec = dgemm.run(sizes=sizes, budget=budget, sweep="square", blas_name=lib.path, store=store,
                                    parent=top.id, label=f"blas {lib.variant}", timeout=600)
                    loaded = rec.params.get("blas_loaded") or {}
                    row.update(status=rec.status, run=rec.id, version=loaded.get("version"),
                               loaded=loaded.get("path"),
                               dgemm={str(p["n"]): p["median"] for p in rec.summary.get("square", [])})
                    for k, v in rec.samples.items():
                        samples[f"{lib.variant}/{k}"] = v
                except RunFailed as e:
                    row.update(status="failed", error=str(e), dgemm={})
                if has_hpl:
                    row["hpl"] = _hpl(lib, hpl_n, store, top.id)
                rows.append(row)
            summary = {"unit": "GFLOPS", "statistic": "median of timed DGEMM blocks", "libraries": rows,
                       "significance": significance(rows, samples, max(sizes)),
                       "hpl_note": hpl_note}
            top.update(summary=summary, samples=samples)
            if all(r["status"] != "ok" for r in rows):
                top.finish("failed", "no BLAS library ran DGEMM successfully")
        return store.get(top.id)
    finally:
        if own:
            store.close()


def significance(rows: list[dict], samples: dict, n: int) -> dict:
    """Each library against the fastest at the largest size: Welch's t-test p-value."""
    from rmax.stats import differ_significantly

    key = f"square/{n}x{n}x{n}"
    ok = [r for r in rows if r.get("dgemm", {}).get(str(n))]
    if not ok:
        return {}
    best = max(ok, key=lambda r: r["dgemm"][str(n)])
    out = {"size": n, "fastest": best["variant"]}
    for r in ok:
        if r is best:
            continue
        sig, p = differ_significantly(samples.get(f"{best['variant']}/{key}", []),
                                      samples.get(f"{r['variant']}/{key}", []))
        out[r["variant"]] = {"slower_by": 1 - r["dgemm"][str(n)] / best["dgemm"][str(n)], "p_value": p,
                             "significant": sig}
    return out
