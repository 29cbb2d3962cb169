"""`rmax bench` commands for single-node kernels (rmax-node)."""

from __future__ import annotations

import click

from rmax.bench import peakflops
from rmax.cli.output import console, fmt, json_option, run_and_show
from rmax.params import TIMEOUT, Count, Seconds, Size
from rmax.errors import RmaxError


# ---- shared pieces of the node commands -------------------------------------------------------------

def _quick_option(f):
    return click.option("--quick", is_flag=True, help="The 30-second node set's share: fewer points, shorter budgets.")(f)


def _timeout_option(f):
    return click.option("--timeout", type=Seconds(1, 86400, lo_open=False), default=None,
                        help="Seconds before the kernel is killed (default: from the budget).")(f)


def _human(nbytes: float | None) -> str:
    if nbytes is None:
        return "—"
    for unit, div in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= div:
            v = nbytes / div
            return f"{v:.0f} {unit}" if v >= 100 or v == int(v) else f"{v:.3g} {unit}"
    return f"{nbytes:.0f} B"


def _table(title: str, columns: list[str], left: int = 1):
    from rich.table import Table

    t = Table(title=title)
    for i, col in enumerate(columns):
        t.add_column(col, justify="left" if i < left else "right")
    return t


# ---- peakflops -------------------------------------------------------------------------------------

@click.command("peakflops")
@_quick_option
@click.option("--budget", type=Seconds(0.01, 3600, lo_open=False), default=None,
              help="Seconds of timed repetitions per measurement (default 0.5, quick 0.05).")
@click.option("--precision", type=click.Choice(["double", "single", "both"]), default="both", show_default=True)
@click.option("--isa", type=click.Choice(["all", "avx512", "avx2", "sse2"]), default="all", show_default=True)
@click.option("--threads", type=Count(1, 4096), default=None, help="Threads for the all-core run.")
@click.option("--timeout", type=TIMEOUT, default=600.0, show_default=True)
@json_option
def peakflops_cmd(quick, budget, precision, isa, threads, timeout, as_json):
    """Measured FMA-throughput peak, one core and all cores, per ISA, and the FMA-unit
    count it implies against the nominal Rpeak of `rmax info`.

    Example: rmax bench peakflops --precision double"""

    def show(record):
        t = _table(f"peakflops (run {record.id[:8]})", ["ISA", "Precision", "Threads", "Median GFLOPS", "Min", "Max", "n"],
                   left=2)
        for k, s in record.summary.items():
            isa_, prec, thr = k.split("/")
            t.add_row(isa_, prec, thr, fmt(s["median"]), fmt(s["min"]), fmt(s["max"]), str(s["n"]))
        console.print(t)
        view = peakflops.rpeak_view(record.summary)
        if view:
            if view.get("fma_units"):
                console.print(f"FMA units per core: {view['fma_units']} ({view['fma_units_source']}: "
                              f"{view['fma_units_detail']})")
            if view.get("formula"):
                console.print(f"Nominal Rpeak (rmax info): {view['formula']}")
            if view.get("warning"):
                console.print(f"Note: {view['warning']}")

    def start(tick):
        return peakflops.run(quick, budget=budget, precision=precision, isa=isa, threads=threads, timeout=timeout,
                             on_stdout=tick)

    run_and_show("peakflops", start, show, as_json)


# ---- cpurate ---------------------------------------------------------------------------------------

@click.command("cpurate")
@_quick_option
@click.option("--budget", type=Seconds(0.01, 86400, lo_open=False), default=None,
              help="Seconds for the whole sweep (default 35, quick 4); the sweep stops at the length that would overrun it.")
@click.option("--precision", type=click.Choice(["double", "single", "both"]), default="both", show_default=True)
@click.option("--min-size", type=Size(), default=None, help="Shortest vector, e.g. 1K (default 1 KiB).")
@click.option("--max-size", type=Size(), default=None, help="Longest vector, e.g. 1GiB (default 4x the last-level cache, capped by memory).")
@click.option("--reps", type=Count(2, 100000), default=None, help="Samples per length, at least (default 30, quick 10).")
@_timeout_option
@json_option
def cpurate_cmd(quick, budget, precision, min_size, max_size, reps, timeout, as_json):
    """Brown's cpu-rate: x = (1+x)(1.5-x)/x over vectors of growing length, GFLOPS,
    empty loop subtracted; cache boundaries from the rate and from its spread.

    Example: rmax bench cpurate --quick"""
    from rmax.bench import cpurate
    from rmax.bench.node_kernel import check_fits

    lo, hi = min_size, max_size
    if hi:
        check_fits("--max-size", hi, 4 if hi <= 64 * 2**20 else 1)
    if lo and hi and lo > hi:
        raise RmaxError(f"--min-size ({lo} bytes) is larger than --max-size ({hi} bytes)")

    def show(record):
        s = record.summary
        curves = s["curves"]
        precs = list(curves)
        t = _table(f"cpurate (run {record.id[:8]}): GFLOPS vs vector length", ["Length"] + [
            c for p in precs for c in (f"{p} median GFLOPS", f"{p} SD/mean %", "n")])
        by_size: dict[int, dict] = {}
        for p in precs:
            for pt in curves[p]:
                by_size.setdefault(pt["bytes"], {})[p] = pt
        for size in sorted(by_size):
            row = [_human(size)]
            for p in precs:
                pt = by_size[size].get(p)
                row += [fmt(pt["median"]), fmt(100 * pt["sd"] / pt["mean"] if pt and pt["mean"] else None, ".1f"),
                        str(pt["n"])] if pt else ["—", "—", "—"]
            t.add_row(*row)
        console.print(t)
        b = _table("Cache boundaries: detected vs reported by sysfs", ["Source"] + precs)
        b.add_row("rate steps (half-way between plateaus)",
                  *[", ".join(_human(x["bytes"]) for x in s["analysis"][p]["rate_steps"]) or "none" for p in precs])
        b.add_row("peaks of the relative SD", *[", ".join(_human(x) for x in s["analysis"][p]["spread_peaks"]) or "none"
                                               for p in precs])
        b.add_row("sysfs (per instance)", *[", ".join(f"{k} {_human(v)}" for k, v in s["sysfs_caches"].items())] * len(precs))
        console.print(b)
        sw = s["sweep"]
        console.print(f"Sweep: {sw.get('lengths_measured')} of {sw.get('lengths_planned')} lengths up to "
                      f"{_human(sw.get('max_size'))}, ended by {sw.get('stopped_by')} after {fmt(sw.get('seconds'), '.1f')} s. "
                      "Rates are medians of timed blocks; SD/mean is the run-to-run spread.")

    def start(tick):
        return cpurate.run(quick, budget=budget, precision=precision, min_size=lo, max_size=hi, reps=reps,
                           timeout=timeout, on_stdout=tick)

    run_and_show("cpurate", start, show, as_json)


# ---- memlat ----------------------------------------------------------------------------------------

@click.command("memlat")
@_quick_option
@click.option("--pattern", type=click.Choice(["stride", "random", "both"]), default="both", show_default=True)
@click.option("--stride", type=Size(), default=None, help="Bytes between nodes of the stride chain (default 64).")
@click.option("--min-size", type=Size(), default=None, help="Smallest working set (default 1 KiB).")
@click.option("--max-size", type=Size(), default=None, help="Largest working set (default 4x the last-level cache, capped by memory).")
@click.option("--budget", type=Seconds(0.01, 86400, lo_open=False), default=None, help="Seconds for the sweep (default 20, quick 3).")
@_timeout_option
@json_option
def memlat_cmd(quick, pattern, stride, min_size, max_size, budget, timeout, as_json):
    """Load latency by pointer chasing vs working-set size (fixed stride and random chain);
    the L1, L2, L3 and memory plateaus in ns.

    Example: rmax bench memlat --pattern random"""
    from rmax.bench import memlat
    from rmax.bench.node_kernel import check_fits

    lo, hi, st = min_size, max_size, stride
    if hi:
        check_fits("--max-size", hi)
    if lo and hi and lo > hi:
        raise RmaxError(f"--min-size ({lo} bytes) is larger than --max-size ({hi} bytes)")

    def show(record):
        s = record.summary
        pats = list(s["curves"])
        t = _table(f"memlat (run {record.id[:8]}): ns per dependent load vs working set",
                   ["Working set"] + [f"{p} {stat} ns" for p in pats for stat in ("median", "min")])
        by: dict[int, dict] = {}
        for p in pats:
            for pt in s["curves"][p]:
                by.setdefault(pt["bytes"], {})[p] = pt
        for size in sorted(by):
            t.add_row(_human(size), *[fmt(by[size][p][stat]) if p in by[size] else "—" for p in pats
                                      for stat in ("median", "min")])
        console.print(t)
        pl = _table("Plateaus of the minimum latency (median over each plateau)",
                    ["Pattern", "Level", "From", "To", "Latency ns"])
        for p in pats:
            for lv in s["analysis"][p]["plateaus"]:
                pl.add_row(p, lv["name"], _human(lv["first_bytes"]), _human(lv["last_bytes"]), fmt(lv["level"]))
        console.print(pl)
        for p in pats:
            steps = ", ".join(_human(b["bytes"]) for b in s["analysis"][p]["steps"]) or "none"
            console.print(f"{p}: boundaries at {steps}")
        console.print("sysfs: " + ", ".join(f"{k} {_human(v)}" for k, v in s["sysfs_caches"].items()))

    def start(tick):
        return memlat.run(quick, budget=budget, pattern=pattern, min_size=lo, max_size=hi, stride=st,
                          timeout=timeout, on_stdout=tick)

    run_and_show("memlat", start, show, as_json)


# ---- memcopy ---------------------------------------------------------------------------------------

@click.command("memcopy")
@_quick_option
@click.option("--min-size", type=Size(), default=None, help="Smallest buffer (default 1 KiB).")
@click.option("--max-size", type=Size(), default=None, help="Largest buffer (default 4x the last-level cache, capped by memory).")
@click.option("--budget", type=Seconds(0.01, 86400, lo_open=False), default=None, help="Seconds for the sweep (default 10, quick 2).")
@_timeout_option
@json_option
def memcopy_cmd(quick, min_size, max_size, budget, timeout, as_json):
    """memcpy bandwidth vs buffer size (seed 05's NIST memcopy), MB/s = 10^6 bytes copied per second.

    Example: rmax bench memcopy --max-size 64MiB"""
    from rmax.bench import memcopy
    from rmax.bench.node_kernel import check_fits

    lo, hi = min_size, max_size
    if hi:
        check_fits("--max-size: source and destination", hi, 2)
    if lo and hi and lo > hi:
        raise RmaxError(f"--min-size ({lo} bytes) is larger than --max-size ({hi} bytes)")

    def show(record):
        s = record.summary
        t = _table(f"memcopy (run {record.id[:8]})", ["Buffer", "Median MB/s", "Min MB/s", "Max MB/s", "n"])
        for p in s["points"]:
            t.add_row(_human(p["bytes"]), fmt(p["median"], ".0f"), fmt(p["min"], ".0f"), fmt(p["max"], ".0f"), str(p["n"]))
        console.print(t)
        steps = ", ".join(_human(b["bytes"]) for b in s["steps_working_set"]) or "none"
        console.print(f"Bandwidth steps at working sets (source + destination) of {steps}; sysfs: " +
                      ", ".join(f"{k} {_human(v)}" for k, v in s["sysfs_caches"].items()))

    def start(tick):
        return memcopy.run(quick, budget=budget, min_size=lo, max_size=hi, timeout=timeout, on_stdout=tick)

    run_and_show("memcopy", start, show, as_json)


# ---- oslat -----------------------------------------------------------------------------------------

@click.command("oslat")
@_quick_option
@click.option("--tests", default=None, help="Comma-separated subset: null, stat, open-close, sig-install, sig-catch, "
              "fork-exit, fork-exec, pipe, unix, ctxsw, udp, tcp, tcp-connect, tcp-bw (default all).")
@click.option("--budget", type=Seconds(0.01, 86400, lo_open=False), default=None, help="Seconds for all tests (default 25, quick 3).")
@_timeout_option
@json_option
def oslat_cmd(quick, tests, budget, timeout, as_json):
    """Operating-system latencies, lmbench style: system calls, files, signals, processes,
    context switches, pipe/AF_UNIX/UDP/TCP round trips, TCP connect and bandwidth (127.0.0.1 only).

    Example: rmax bench oslat --tests null,pipe,ctxsw"""
    from rmax.bench import oslat

    names = [t.strip() for t in tests.split(",") if t.strip()] if tests else None
    oslat.check_tests(names)

    def show(record):
        t = _table(f"oslat (run {record.id[:8]}), smaller is better except bandwidth",
                   ["Test", "Median", "Min", "Max", "Unit", "n"])
        for label, r in record.summary["results"].items():
            t.add_row(label, fmt(r["median"], ".3f"), fmt(r["min"], ".3f"), fmt(r["max"], ".3f"), r["unit"], str(r["n"]))
        console.print(t)
        console.print("Round trips are full round trips; context switches are per switch, with the cost of the pipe "
                      "hop and working-set read in one process subtracted (lmbench's method).")

    def start(tick):
        return oslat.run(quick, budget=budget, tests=names, timeout=timeout, on_stdout=tick)

    run_and_show("oslat", start, show, as_json)
