"""`rmax bench` commands for single-node kernels (rmax-node)."""

from __future__ import annotations

import click

from rmax.cli.output import console, fmt, json_option, run_and_show
from rmax.params import Count, Number, NumberList, Seconds


# ---- shared pieces of the node commands -------------------------------------------------------------

def _quick_option(f):
    return click.option("--quick", is_flag=True, help="The 30-second node set's share: fewer points, shorter budgets.")(f)


def _timeout_option(f):
    return click.option("--timeout", type=Seconds(1, 86400, lo_open=False), default=None,
                        help="Seconds before the kernel is killed (default: from the budget).")(f)


def _table(title: str, columns: list[str], left: int = 1):
    from rich.table import Table

    t = Table(title=title)
    for i, col in enumerate(columns):
        t.add_column(col, justify="left" if i < left else "right")
    return t


# ---- dgemm -----------------------------------------------------------------------------------------

# Matrix orders: at most 2^20 (the memory check refuses what does not fit long before).
DIMS = NumberList(1, 1 << 20, integer=True, rule="matrix dimensions must be greater than zero")


@click.command("dgemm")
@_quick_option
@click.option("--blas", "blas_name", default=None,
              help="openblas, blis, atlas, reference, or a path to a BLAS library (default: the system's libblas.so.3).")
@click.option("--sweep", type=click.Choice(["square", "k", "both"]), default="both", show_default=True)
@click.option("--sizes", type=DIMS, default=None, help="Square orders n, comma-separated (default 128,256,512,1024,2048).")
@click.option("--k", "ks", type=DIMS, default=None, help="Inner dimensions k at m = n = --mn (default 32..512).")
@click.option("--mn", type=Number(1, 1 << 20, integer=True, rule="matrix dimensions must be greater than zero"),
              default=None, help="m = n of the k sweep (default 2048).")
@click.option("--threads", type=Count(1, 4096), default=1, show_default=True, help="BLAS threads.")
@click.option("--budget", type=Seconds(0.001, 3600, lo_open=False), default=None, help="Seconds per point (default 0.5, quick 0.1).")
@_timeout_option
@json_option
def dgemm_cmd(quick, blas_name, sweep, sizes, ks, mn, threads, budget, timeout, as_json):
    """DGEMM GFLOPS vs square size, and vs k at fixed m = n (seed 02's rule for HPL's NB).

    Example: rmax bench dgemm --blas blis --sweep square"""
    from rmax.bench import dgemm

    def show(record):
        s = record.summary
        loaded = record.params.get("blas_loaded") or {}
        t = _table(f"dgemm (run {record.id[:8]}), BLAS {loaded.get('name')} {loaded.get('version') or ''}, "
                   f"{threads} thread(s)", ["Sweep", "m", "n", "k", "Median GFLOPS", "Min", "Max", "n samples"])
        for sw in ("square", "k"):
            for p in s.get(sw, []):
                t.add_row(sw, str(p["m"]), str(p["n"]), str(p["k"]), fmt(p["median"]), fmt(p["min"]), fmt(p["max"]),
                          str(p["n_samples"]))
        console.print(t)
        if s.get("nb_suggested"):
            console.print(f"Smallest k within 3% of the best k-sweep rate (seed 02's NB rule): {s['nb_suggested']}")

    def start(tick):
        return dgemm.run(quick, sizes=sizes, ks=ks, mn=mn, budget=budget,
                         sweep=sweep, blas_name=blas_name, threads=threads, timeout=timeout or 900.0,
                         on_stdout=tick)

    run_and_show("dgemm", start, show, as_json)


# ---- blas ------------------------------------------------------------------------------------------

@click.command("blas")
@_quick_option
@click.option("--sizes", type=DIMS, default=None, help="Square DGEMM orders, comma-separated (default 256,1024; quick 256,512).")
@click.option("--no-hpl", is_flag=True, help="Skip the short rmax-hpl run per library.")
@json_option
def blas_cmd(quick, sizes, no_hpl, as_json):
    """Every installed BLAS side by side: DGEMM GFLOPS, and a short rmax-hpl run when it exists.

    Example: rmax bench blas --quick"""
    from rmax.bench import blas_compare

    def show(record):
        s = record.summary
        sizes_ = record.params["sizes"]
        has_hpl = record.params.get("hpl_n")
        cols = ["BLAS", "Version"] + [f"DGEMM n={n} GFLOPS" for n in sizes_] + (
            [f"HPL N={has_hpl} GFLOPS"] if has_hpl else []) + ["vs fastest"]
        t = _table(f"BLAS comparison (run {record.id[:8]}), 1 thread, median GFLOPS", cols, left=2)
        sig = s.get("significance", {})
        for r in s["libraries"]:
            row = [r["variant"], str(r.get("version") or "—")] + [fmt(r.get("dgemm", {}).get(str(n))) for n in sizes_]
            if has_hpl:
                h = r.get("hpl", {})
                row.append(fmt(h.get("gflops")) if h.get("status") == "ok" else h.get("status", "—"))
            d = sig.get(r["variant"])
            row.append("fastest" if sig.get("fastest") == r["variant"] else
                       (f"-{100 * d['slower_by']:.0f}% (p={d['p_value']:.2g})" if d else r.get("status", "—")))
            t.add_row(*row)
        console.print(t)
        if s.get("hpl_note"):
            console.print(f"Note: {s['hpl_note']}")

    def start(tick):
        return blas_compare.run(quick, sizes=sizes, hpl=not no_hpl, on_progress=tick)

    run_and_show("blas", start, show, as_json)
