"""peakflops: measured FMA-throughput peak (native/node/peakflops.c), one core and all cores per
ISA and precision, read against the nominal Rpeak (rmax.inventory.rpeak): the FMA-unit count it
implies, and the peak that "% of peak" is computed against. A survey measures the peak once, here."""

from __future__ import annotations

from dataclasses import dataclass

import click

from rmax.bench.family import Family, RunContext, Summary, SurveyPlan, option, register
from rmax.bench.node_kernel import invalid
from rmax.bench.runner import Parsed
from rmax.bench.view import Figure, Plot, Table, View, cell, figure
from rmax.inventory.rpeak import BUSY_PREFIX, TOGETHER, PeakRow, derive, peak_rows, peakflops_row, widest_isa
from rmax.native import executable
from rmax.params import Count, Seconds

# Interference (another process, a lower clock under load) only ever lowers a block's rate, so
# the peak is the fastest timed block; the median is shown beside it.
PEAK = "maximum of timed blocks"


@dataclass
class PeakflopsOptions:
    budget: float = option(0.5, "Seconds of timed repetitions per measurement.",
                           type=Seconds(0.01, 3600, lo_open=False), quick=0.05)
    precision: str = option("both", "Precision.", type=click.Choice(["double", "single", "both"]))
    isa: str = option("all", "Instruction set.", type=click.Choice(["all", "avx512", "avx2", "sse2"]))
    threads: int | None = option(None, "Threads for the all-core run.", type=Count(1, 4096), show="all cores")
    sample_time: float = option(0.02, "Seconds per timed block.", type=Seconds(0.001, 10, lo_open=False), quick=0.005,
                               cli=False)


@dataclass
class PeakBasis:
    """rmax.inventory.rpeak.derive's reading of the rows against the node's nominal Rpeak."""

    isa: str | None                     # the widest ISA of the CPU
    fma_units: int | None
    fma_units_source: str | None        # measured | not determined
    fma_units_detail: str | None
    nominal_gflops: float | None
    formula: str | None
    trustworthy: bool
    warning: str | None
    basis: str                          # rpeak.BASES: which peak % of peak uses
    basis_reason: str
    gflops: float | None = None         # that peak (None in rmax.peakflops/2 runs: their basis is not used)


@dataclass
class PeakflopsSummary(Summary):
    SCHEMA = "rmax.peakflops/3"
    READS = ("rmax.peakflops/2",)       # /2 lacks rpeak.gflops: chosen by an older rule, it is not used
    results: list[PeakRow]
    peak_row: int | None = None         # the all-core row of the widest ISA, double: the measured peak
    rpeak: PeakBasis | None = None      # None: the CPU facts of the node were not at hand
    unit: str = "GFLOPS"
    statistic: str = f"{PEAK} (peak); median beside it"


def _of(r: PeakRow) -> str:
    return f"maximum of {r.n} timed blocks"


def _peak_row(rows: list[PeakRow]) -> int | None:
    """The index of the measured peak's all-core row (rpeak.peak_rows, as rpeak.derive uses it)."""
    _, top = peak_rows(rows)
    return next((i for i, r in enumerate(rows) if r is top), None)


def cpu_facts(ctx: RunContext) -> dict | None:
    """The CPU facts of the node a run is on: those the survey's inventory step stored for it (so
    that the survey's Rpeak and this run's derive from the same facts), else this node's own when
    the run is here (None when there are none)."""
    hosts = ctx.spec.hosts if ctx.spec is not None else None
    if ctx.store is not None and ctx.parent is not None:
        info = [r for r in ctx.store.children(ctx.parent) if r.kind == "info" and r.status == "ok"
                and (r.hosts == [hosts[0].name] if hosts else True)]
        if len(info) == 1 or (hosts and info):
            return info[-1].summary.get("cpu") or None
    if not hosts:
        from rmax.inventory.cpu import collect_cpu

        return collect_cpu()
    return None


def derive_from_rows(cpu: dict, rows: list[PeakRow], busy: str | None = None) -> dict:
    """rmax.inventory.rpeak.derive over a peakflops run's rows: its summary's basis, and the
    survey's inventory Rpeak once the survey's peakflops step has run (survey/steps.py). `busy`:
    how busy the node was while the rows were measured (load.busy_line), when it was: the rows are
    then shown but are no basis for % of peak."""
    widest = widest_isa(cpu.get("flags", []))
    missing = None if any(r.isa == widest and r.precision == "double" for r in rows) else \
        f"this run measured no double-precision {widest} row"
    return derive(cpu, rows, f"{BUSY_PREFIX}{busy}" if busy else missing)


def apart(rows: list[PeakRow]) -> list[str]:
    """Notes on all-core rows below TOGETHER x threads x the same kernel's one-core peak."""
    one = {(r.isa, r.precision): r for r in rows if r.threads == 1}
    out = []
    for r in rows:
        o = one.get((r.isa, r.precision))
        if r.threads > 1 and o and o.max and r.max < TOGETHER * r.threads * o.max:
            out.append(f"{r.isa} {r.precision}: {r.threads} threads reached {r.max:.1f} GFLOPS, "
                       f"{100 * r.max / (r.threads * o.max):.0f}% of {r.threads} x the one-core {o.max:.1f}: a lower "
                       "all-core clock, or threads that did not all run at once (other work on the CPUs, a virtual "
                       "machine's vCPUs); where DGEMM on as many threads beats it, it is the latter, and the peak "
                       "used for % of peak is then that DGEMM rate (rmax model, tune, cost)")
    return out


@register
class Peakflops(Family):
    """Measured FMA-throughput peak, one core and all cores, per ISA, and the FMA-unit
    count it implies against the nominal Rpeak of `rmax info`."""

    name = "peakflops"
    native = ("rmax-node", "peakflops")
    title = "measured FMA-throughput peak, one core and all cores"
    Options = PeakflopsOptions
    Summary = PeakflopsSummary
    survey = SurveyPlan("measured FMA peak", 0.03, 20)
    example = "rmax bench peakflops --precision double"

    def argv(self, o):
        a = [executable("rmax-node"), "peakflops", "--json", "-", "--budget", str(o.budget),
             "--precision", o.precision, "--isa", o.isa, "--sample-time", str(o.sample_time)]
        if o.threads:
            a += ["--threads", str(o.threads)]
        return a

    def parser(self, o, ctx):
        cpu = cpu_facts(ctx)
        return lambda records: self.parse(records, cpu)

    def parse(self, records, cpu: dict | None = None):
        recs = [r for r in records if r.get("schema") == "rmax.peakflops/1"]
        rows = [peakflops_row(r) for r in recs if r.get("validated")]
        basis = None
        if cpu and rows:
            d = derive_from_rows(cpu, rows)
            basis = PeakBasis(d["isa"], d["fma_units"], d["fma_units_source"], d["fma_units_detail"],
                              d["nominal_gflops"], d["formula"], d["trustworthy"], d["warning"], d["basis"],
                              d["basis_reason"], d["gflops"])
        summary = PeakflopsSummary(rows, _peak_row(rows), basis)
        samples = {f"{r['isa']}/{r['precision']}/{r['threads']}": r["samples"] for r in recs if r.get("validated")}
        err = invalid(recs, lambda r: f"{r['isa']}/{r['precision']}/{r['threads']}")
        if not recs:
            return Parsed(summary, samples, "failed", "peakflops measured nothing")
        return Parsed(summary, samples, "invalid" if err else "ok", err)

    def _peak(self, s: PeakflopsSummary) -> Figure | None:
        if s.peak_row is None:
            return None
        r = s.results[s.peak_row]
        return figure(s, ("results", s.peak_row, "max"), "peak",
                      f"Measured FMA peak ({r.isa}, double, {r.threads} thread{'s' if r.threads != 1 else ''})",
                      "GFLOPS", _of(r), role="peak")

    def headline(self, s: PeakflopsSummary) -> list[Figure]:
        peak = self._peak(s)
        out = [peak]
        if s.rpeak is not None:
            b = s.rpeak
            out.append(figure(s, ("rpeak", "nominal_gflops"), "rpeak_nominal", "Rpeak (nominal)", "GFLOPS",
                              "cores x clock x flops/cycle", role="rpeak_nominal"))
            # a measured basis is the peak's own field, so the two rows cannot disagree; a run
            # stored before rpeak.gflops (rmax.peakflops/2) chose its basis by a rule that could
            # take an SSE2-only rate for the peak, so it gives none
            if b.gflops is not None:
                if b.basis == "measured" and peak is not None:
                    path, stat = peak.path, f"basis: measured, {peak.statistic}"
                elif b.basis == "measured per core":
                    path, stat = ("rpeak", "gflops"), "basis: measured per core x cores, fastest of one core's blocks"
                else:
                    path, stat = ("rpeak", "nominal_gflops"), "basis: nominal"
                out.append(figure(s, path, "peak_basis", "Peak used for % of peak", "GFLOPS", stat,
                                  role="peak_basis"))
        return [f for f in out if f]

    def metrics(self, s: PeakflopsSummary) -> list[Figure]:
        out = [figure(s, ("results", i, "max"), f"{r.isa}.{r.precision}.{r.threads}",
                      f"{r.isa} {r.precision} FMA peak ({r.threads} thread{'s' if r.threads != 1 else ''})",
                      "GFLOPS", _of(r)) for i, r in enumerate(s.results)]
        return [f for f in out if f]

    def view(self, s: PeakflopsSummary) -> View:
        t = Table(["ISA", "Precision", "Threads", "Peak GFLOPS", "Median", "Min", "n"],
                  [[r.isa, r.precision, str(r.threads), cell(r.max, ".1f"), cell(r.median, ".1f"), cell(r.min, ".1f"),
                    str(r.n)] for r in s.results],
                  f"peak = {PEAK}; FMA-throughput kernels, each sample one timed block", left=2)
        notes = []
        b = s.rpeak
        if b is not None:
            if b.fma_units:
                notes.append(f"FMA units per core: {b.fma_units} ({b.fma_units_source}: {b.fma_units_detail})")
            elif b.fma_units_source:
                notes.append(f"FMA units per core: {b.fma_units_detail}")
            if b.formula:
                notes.append(f"Nominal Rpeak (rmax info): {b.formula}")
            if b.warning:
                notes.append(f"Note: {b.warning}")
            notes.append(f"% of peak basis: {b.basis} ({b.basis_reason})")
        notes += apart(s.results)
        data = [{"isa": r.isa, "precision": r.precision, "threads": r.threads, "peak": r.max, "median": r.median,
                 "min": r.min, "n": r.n} for r in s.results]
        return View([t], notes, {"peakflops": data})

    def plots(self, runs):
        labels, values, errors = [], [], []
        for label, s in runs:
            for r in s.results:
                if r.precision == "double":
                    labels.append(f"{label} {r.isa} x{r.threads}")
                    values.append(r.max)
                    errors.append((r.min, r.max))
        return [Plot("bar", "Double-precision FMA peak", ylabel=f"GFLOPS ({PEAK}; error bar: min-max)", labels=labels,
                     values=values, errors=errors)] if labels else []
