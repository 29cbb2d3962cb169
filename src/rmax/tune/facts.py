"""The machine facts a session needs, gathered once and stored with it: the
memory that sizes N, the Rpeak of the ranks used, the DGEMM bound (every flop at
the per-process DGEMM rate) and the BLAS name for the table."""

from __future__ import annotations

from rmax.errors import RmaxError


def dgemm_bound(store, np: int, blas_threads: int, nb: int | None, n: int | None = None,
                grid: tuple[int, int] | None = None) -> tuple[float | None, str, bool]:
    """(GFLOPS, source, whether at HPL's shape) of the DGEMM bound: every flop at the DGEMM rate
    of one rank (its BLAS threads; with N and grid, at the shape of HPL's trailing update:
    rmax.model.inputs) x np."""
    from rmax.model.inputs import gamma3_from_store

    try:
        g = gamma3_from_store(store, nb, threads=blas_threads, n=n, grid=grid)
    except RmaxError:
        return None, (f"no dgemm run with {blas_threads} thread(s) stored "
                      f"(run `rmax bench dgemm --threads {blas_threads}`)"), False
    return 1e-9 / g.value * np, g.source, g.at_hpl_shape


def gather(store, np: int, nodes: int, blas_threads: int, nb_hint: int | None = None) -> dict:
    from rmax.inventory import collect

    inv = collect(measure=False)
    mem = inv.get("memory") or {}
    cores = (inv.get("cpu") or {}).get("cores") or 1
    from rmax.model.inputs import peak_basis

    rp, basis = peak_basis(store, inv)
    blas = (((inv.get("blas") or {}).get("loaded")) or {}).get("name") or "?"
    f = {"memory_bytes_per_node": mem.get("total_bytes"), "available_bytes_per_node": mem.get("available_bytes"),
         "nodes": nodes, "blas": blas,
         # The peak of the cores the ranks use, on the basis the survey and report use; never above the nodes' total.
         "rpeak_gflops": min(rp / cores * np * blas_threads, rp * nodes) if rp else None,
         "rpeak_basis": basis}
    # Before N is known, at the NB hint alone; the session takes it again at HPL's shape once it is.
    return with_bound(f, np, *dgemm_bound(store, np, blas_threads, nb_hint)[:2])


def with_bound(f: dict, np: int, bound: float | None, source: str) -> dict:
    """facts f of np ranks with this DGEMM bound, and the first guess at the HPL rate it gives."""
    f["dgemm_bound_gflops"], f["dgemm_source"] = bound, source
    # A first guess at the HPL rate, only for the first trial's predicted time (budget check,
    # watchdog): half the DGEMM bound, or 15% of a nominal Rpeak, deliberately low: a guess too
    # high would predict too short a first trial and cut it off.
    if bound:
        f["rate_guess_gflops"] = 0.5 * bound
    elif f["rpeak_gflops"]:
        f["rate_guess_gflops"] = 0.15 * f["rpeak_gflops"]
    else:
        f["rate_guess_gflops"] = 1.0 * np
    return f
