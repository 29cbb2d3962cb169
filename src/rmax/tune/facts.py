"""The machine facts a session needs, gathered once and stored with it: the
memory that sizes N, the Rpeak of the ranks used, the DGEMM bound (every flop at
the per-process DGEMM rate) and the BLAS name for the table. A store with no DGEMM
rate gets one from a short DGEMM run first (about a second, kept in a store of its
own that is thrown away: a command refused by the budget check stores nothing), so
that the first trial's predicted time, which the budget check and the watchdog go
by, comes from a measurement of this machine, not from a guess."""

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


FIRST_ORDER = 1024      # the short DGEMM's order: large enough to run near the BLAS's rate, a second at most
FIRST_BUDGET = 0.3      # seconds of timed blocks


def measured_bound(np: int, blas_threads: int, nb: int | None) -> tuple[float | None, str]:
    """The DGEMM bound from a short square DGEMM with the ranks' BLAS threads, run now into a
    store of its own that is removed afterwards (the session measures and stores its own DGEMM
    once it starts): (GFLOPS, source), or (None, why not)."""
    import tempfile
    from pathlib import Path

    from rmax.bench.family import RunContext
    from rmax.families import get, run
    from rmax.store import open_store

    fam = get("dgemm")
    with tempfile.TemporaryDirectory(prefix="rmax-first-dgemm-") as folder:
        with open_store(Path(folder) / "first.db") as scratch:
            try:
                run(fam, fam.options(True, sizes=(FIRST_ORDER,), sweep="square", budget=FIRST_BUDGET,
                                     threads=blas_threads), RunContext(store=scratch, timeout=120.0, quick=True))
            except RmaxError as e:
                return None, f"a short DGEMM failed: {e.message}"
            bound, source = dgemm_bound(scratch, np, blas_threads, nb)[:2]
    return bound, f"a short DGEMM run now ({source.split(': ', 1)[-1]}), the store having no DGEMM rate"


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
    bound, source = dgemm_bound(store, np, blas_threads, nb_hint)[:2]
    if bound is None:    # nothing stored: measured now rather than guessed
        got, why = measured_bound(np, blas_threads, nb_hint)
        bound, source = (got, why) if got else (None, f"{source}; {why}")
    return with_bound(f, np, bound, source)


def with_bound(f: dict, np: int, bound: float | None, source: str) -> dict:
    """facts f of np ranks with this DGEMM bound, and the first guess at the HPL rate it gives."""
    f["dgemm_bound_gflops"], f["dgemm_source"] = bound, source
    # A first guess at the HPL rate, only for the first trial's predicted time (budget check,
    # watchdog): half the DGEMM bound (measured, by gather when nothing was stored), or where no
    # DGEMM could run 15% of a nominal Rpeak, deliberately low: a guess too high would predict too
    # short a first trial and cut it off.
    if bound:
        f["rate_guess_gflops"] = 0.5 * bound
    elif f["rpeak_gflops"]:
        f["rate_guess_gflops"] = 0.15 * f["rpeak_gflops"]
    else:
        f["rate_guess_gflops"] = 1.0 * np
    return f
