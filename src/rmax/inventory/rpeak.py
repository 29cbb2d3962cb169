"""Rpeak = cores x clock x DP flops/cycle, with its derivation, and the measured peak.

Flops/cycle come from the widest ISA (SSE2 4, AVX 8, AVX2+FMA 16, AVX-512 16 with one
FMA unit, 32 with two). The FMA-unit count is not in the CPU flags, so it is measured
(one core's AVX-512 FMA rate over its AVX2 FMA rate: about 2 means two 512-bit units);
until a measurement decides it, the nominal Rpeak of an AVX-512 CPU is left unknown
rather than assumed. Single precision does twice the flops per cycle. In a VM the clock
cpuinfo shows may not be the one the cores run at; the measured FMA peak exposes that,
and `basis` says which peak "% of peak" figures should use."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from rmax.inventory.probe import run

DP_FLOPS_PER_CYCLE = {"sse2": 4, "avx": 8, "avx2": 16}
AVX512_FLOPS_PER_CYCLE = {1: 16, 2: 32}
ISA_LABEL = {"sse2": "SSE2", "avx": "AVX", "avx2": "AVX2+FMA", "avx512": "AVX-512"}
# The peaks "% of peak" may be computed against (choose_basis); the info schema lists the same.
BASES = ("nominal", "measured", "measured per core")
BUSY_PREFIX = "measured on a busy node: "   # a measure_reason beside rows: shown, not a basis for % of peak
# An all-core peak below this share of threads x the one-core peak is worth a word: a lower
# all-core clock explains some of it, threads that did not all run at once (other work, a VM's
# vCPUs) the rest. A 16-vCPU guest measured 64-70% while its DGEMM reached 91%.
TOGETHER = 0.85

# rmax-node peakflops settings: short blocks so the whole measurement takes about 1 s
PEAKFLOPS_ARGS = ["--precision", "double", "--budget", "0.05", "--sample-time", "0.01"]


def widest_isa(flags: set[str] | list[str]) -> str | None:
    flags = set(flags)
    if "avx512f" in flags:
        return "avx512"
    if "avx2" in flags and "fma" in flags:
        return "avx2"
    if "avx" in flags:
        return "avx"
    if "sse2" in flags:
        return "sse2"
    return None


def dp_flops_per_cycle(isa: str, fma_units: int | None = None) -> int | None:
    """None for AVX-512 while its FMA-unit count is not known."""
    if isa == "avx512":
        return AVX512_FLOPS_PER_CYCLE.get(fma_units)
    return DP_FLOPS_PER_CYCLE[isa]


def fma_units_from_ratio(ratio: float) -> int | None:
    """AVX-512 over AVX2 one-core FMA rate: ~2 -> two 512-bit units, ~1 -> one; else unknown."""
    if ratio >= 1.5:
        return 2
    if ratio >= 0.7:
        return 1
    return None


def fma_units_from_rows(one512: PeakRow, one256: PeakRow, per_core: float | None = None) -> tuple[int | None, str]:
    """(units or None, how it was decided) from one core's AVX-512 and AVX2 FMA rows.
    Decided only when the medians' ratio, the whole 95% interval of that ratio (from the
    medians' intervals), the fastest blocks' ratio (interference only slows a block) and
    `per_core`, the same ratio of the fastest per-core rates of every row of the two ISAs
    (all-core rows too), all give the same count: one busy stretch during a row cannot decide it."""
    med = one512.median / one256.median
    fast = one512.max / one256.max if one256.max else None
    ci = (one512.ci95[0] / one256.ci95[1], one512.ci95[1] / one256.ci95[0]) \
        if one512.ci95 and one256.ci95 and min(one256.ci95) > 0 else None
    text = (f"AVX-512 / AVX2 one-core DP FMA rate = {one512.median:.1f} / {one256.median:.1f} = {med:.2f} "
            f"(medians of {one512.n} and {one256.n} blocks"
            + (f"; 95% interval of the ratio {ci[0]:.2f}-{ci[1]:.2f}" if ci else "; too few blocks for an interval")
            + (f"; fastest blocks {fast:.2f}" if fast else "")
            + (f"; fastest per core over all rows {per_core:.2f}" if per_core else "") + ")")
    votes = {fma_units_from_ratio(med)} | {fma_units_from_ratio(r) for r in (fast, per_core) if r}
    if ci:
        votes |= {fma_units_from_ratio(ci[0]), fma_units_from_ratio(ci[1])}
    if ci and len(votes) == 1 and None not in votes:
        return votes.pop(), text
    return None, (f"not determined: {text} does not settle between one unit (ratio about 1) and two "
                  "(about 2), a busy machine most likely; measure again when it is quiet")


def choose_clock(cpufreq_max_hz: float | None, model_name_ghz: float | None,
                 cpuinfo_mhz: float | None) -> tuple[float | None, str | None]:
    """(Hz, which source). The highest sustained clock the system states: cpufreq's max,
    else the nominal clock in the model name, else what cpuinfo reports."""
    if cpufreq_max_hz:
        return cpufreq_max_hz, "cpufreq cpuinfo_max_freq"
    if model_name_ghz:
        return model_name_ghz * 1e9, "model name '@ x.xxGHz'"
    if cpuinfo_mhz:
        return cpuinfo_mhz * 1e6, "/proc/cpuinfo 'cpu MHz'"
    return None, None


def nominal_gflops(cores: int, clock_hz: float, flops_per_cycle: int) -> float:
    return cores * clock_hz * flops_per_cycle / 1e9


@dataclass
class PeakRow:
    """One measurement of rmax-node peakflops (the peakflops family stores a list of them)."""

    isa: str
    precision: str
    threads: int
    fused: bool                 # an FMA kernel (SSE2 has none: a multiply and an add)
    median: float               # GFLOPS of the timed blocks
    min: float
    max: float
    mean: float
    n: int                      # timed blocks
    ci95: list[float] | None = None


def peakflops_row(rec: dict) -> PeakRow:
    """One validated rmax-node peakflops record as a row."""
    s = rec["summary"]
    return PeakRow(rec["isa"], rec["precision"], rec["threads"], bool(rec.get("fused")), s["median"], s["min"],
                   s["max"], s["mean"], s["n"], s.get("ci95"))


def parse_peakflops(text: str) -> list[PeakRow]:
    """rmax-node peakflops JSON lines -> the validated measurements as rows."""
    recs = [json.loads(line) for line in map(str.strip, text.splitlines()) if line.startswith("{")]
    return [peakflops_row(rec) for rec in recs if rec.get("validated")]


def measure_peak(timeout: float = 60) -> tuple[list[PeakRow] | None, str | None]:
    """Run the FMA-throughput kernels (about 1 s); (rows, None) or (None, why not). Measured on a
    busy node (load.verdict of readings around it), the rows come with that as their reason: they
    are shown, but % of peak is not based on them (derive's `busy`)."""
    from rmax.errors import RmaxError
    from rmax.inventory import load
    from rmax.native import executable
    try:
        exe = executable("rmax-node")
    except RmaxError as e:
        return None, str(e)
    before = load.read()
    out, why = run([exe, "peakflops", "--json", "-", *PEAKFLOPS_ARGS], timeout=timeout)
    after = load._read()
    busy = load.busy_line({"start": before.as_dict(), "end": after.as_dict()}) if before and after else None
    if out is None:
        return None, why
    try:
        rows = parse_peakflops(out)
    except (ValueError, KeyError) as e:
        return None, f"rmax-node peakflops printed unparsable JSON: {e}"
    if not rows:
        return None, "rmax-node peakflops printed no measurements"
    return rows, (f"{BUSY_PREFIX}{busy}" if busy else None)


def plural(n, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def peak_rows(rows: list[PeakRow]) -> tuple[PeakRow | None, PeakRow | None]:
    """The measured peak's rows: the fastest double-precision row on one core and on the most
    threads, over every ISA (FMA kernels; SSE2's mul+add when no FMA was measured), so that no
    row of the run beats the peak."""
    double = [r for r in rows if r.precision == "double"]
    double = [r for r in double if r.fused] or double
    if not double:
        return None, None
    lo, hi = min(r.threads for r in double), max(r.threads for r in double)
    return (max((r for r in double if r.threads == lo), key=lambda r: r.max),
            max((r for r in double if r.threads == hi), key=lambda r: r.max))


def _per_core(rows: list[PeakRow], isa: str) -> float | None:
    rates = [r.max / r.threads for r in rows if r.isa == isa and r.precision == "double" and r.threads]
    return max(rates) if rates else None


def _row(rows: list[PeakRow], isa: str, one_core: bool) -> PeakRow | None:
    cands = [r for r in rows if r.isa == isa and r.precision == "double"]
    if not cands:
        return None
    return min(cands, key=lambda r: r.threads) if one_core else max(cands, key=lambda r: r.threads)


@dataclass
class Derivation:
    """The Rpeak section while its rules (RULES) fill it in, in order; each rule reads what the
    ones before it decided and says in `reasons` why a value it leaves unknown is unknown."""

    cpu: dict
    rows: list[PeakRow] | None
    measure_reason: str | None
    reasons: dict[str, str] = field(default_factory=dict)
    isa: str | None = None
    cores: int | None = None
    units: int | None = None
    units_source: str | None = None
    units_detail: str | None = None
    fpc: int | None = None
    clock_hz: float | None = None
    clock_source: str | None = None
    nominal: float | None = None
    formula: str | None = None
    measured: dict | None = None
    warning: str | None = None
    basis: str | None = None
    basis_reason: str | None = None
    gflops: float | None = None

    def section(self) -> dict:
        cpu = self.cpu
        return {
            "cores": self.cores, "isa": self.isa, "clock_hz": self.clock_hz, "clock_source": self.clock_source,
            "clock_candidates": {"cpufreq_max_hz": cpu.get("cpufreq_max_hz"),
                                 "model_name_hz": cpu["model_name_ghz"] * 1e9 if cpu.get("model_name_ghz") else None,
                                 "cpuinfo_hz": cpu["cpuinfo_mhz"] * 1e6 if cpu.get("cpuinfo_mhz") else None},
            "fma_units": self.units, "fma_units_source": self.units_source, "fma_units_detail": self.units_detail,
            "flops_per_cycle": self.fpc, "nominal_gflops": self.nominal, "formula": self.formula,
            "measured": self.measured, "trustworthy": self.warning is None, "warning": self.warning,
            "basis": self.basis, "basis_reason": self.basis_reason, "gflops": self.gflops, "reasons": self.reasons,
        }


def _cpu(d: Derivation) -> None:
    """The widest ISA in the CPU flags, and the cores."""
    d.isa = widest_isa(d.cpu.get("flags", []))
    d.cores = d.cpu.get("cores")


def _fma_units(d: Derivation) -> None:
    """AVX-512 only: the FMA-unit count, decided by one core's AVX-512 over AVX2 FMA rate
    (fma_units_from_rows), else not determined."""
    if d.isa != "avx512":
        return
    rows = d.rows
    one512, one256 = (_row(rows, "avx512", True), _row(rows, "avx2", True)) if rows else (None, None)
    if one512 and one256 and one256.median:
        c512, c256 = _per_core(rows, "avx512"), _per_core(rows, "avx2")
        d.units, d.units_detail = fma_units_from_rows(one512, one256, c512 / c256 if c512 and c256 else None)
    else:
        d.units_detail = ("not determined: it needs one core's AVX-512 and AVX2 FMA rates, and "
                          + (d.measure_reason or "this measurement has not both (measure every ISA)"))
    d.units_source = "measured" if d.units else "not determined"
    if d.units is None:
        d.reasons["fma_units"] = d.units_detail


def _flops_per_cycle(d: Derivation) -> None:
    d.fpc = dp_flops_per_cycle(d.isa, d.units) if d.isa else None


def _clock(d: Derivation) -> None:
    d.clock_hz, d.clock_source = choose_clock(d.cpu.get("cpufreq_max_hz"), d.cpu.get("model_name_ghz"),
                                              d.cpu.get("cpuinfo_mhz"))


def _nominal(d: Derivation) -> None:
    """cores x clock x flops/cycle with its formula, or what of them is unknown."""
    if None in (d.cores, d.clock_hz, d.fpc):
        missing = [n for n, v in (("cores", d.cores), ("clock", d.clock_hz), ("flops/cycle", d.fpc)) if v is None]
        d.reasons["nominal_gflops"] = f"unknown {', '.join(missing)}" + (
            ": the AVX-512 FMA-unit count is not determined" if d.isa == "avx512" and d.units is None else "")
    else:
        d.nominal = nominal_gflops(d.cores, d.clock_hz, d.fpc)
        d.formula = (f"{d.cores} cores x {d.clock_hz / 1e9:.3f} GHz ({d.clock_source}) x {d.fpc} DP flops/cycle "
                     f"({ISA_LABEL[d.isa]}"
                     + (f", {d.units} FMA unit{'s' if d.units != 1 else ''} {d.units_source}" if d.isa == "avx512" else "")
                     + (", two 256-bit FMA pipes as since Haswell and Zen 2: not measured" if d.isa == "avx2" else "")
                     + f") = {d.nominal:.1f} GFLOPS")
    if d.isa is None:
        d.reasons["isa"] = "no SSE2 or wider in the CPU flags"
    if d.clock_hz is None:
        d.reasons["clock_hz"] = "no cpufreq, no '@ GHz' in the model name and no 'cpu MHz' in /proc/cpuinfo"


def _measured(d: Derivation) -> None:
    """Every measured row with its effective clock, and the measured peak: the fastest block of the
    fastest row of any ISA (interference only slows a block)."""
    rows, isa, fpc = d.rows, d.isa, d.fpc
    if not rows:
        d.reasons["measured"] = d.measure_reason or "not measured"
        return
    by_isa = []
    for r in rows:
        per = DP_FLOPS_PER_CYCLE.get(r.isa) if r.isa != "avx512" else (fpc if isa == "avx512" else None)
        if per and r.precision == "single":
            per *= 2  # twice the lanes per vector
        # only fused (FMA) kernels map cleanly to flops/cycle; SSE2 mul+add can use extra adders
        eff = r.max * 1e9 / (per * r.threads) if per and r.fused else None
        by_isa.append({"isa": r.isa, "precision": r.precision, "threads": r.threads, "fused": r.fused,
                       "median_gflops": r.median, "n": r.n, "min_gflops": r.min, "max_gflops": r.max,
                       "ci95": r.ci95, "validated": True, "flops_per_cycle": per if r.fused else None,
                       "effective_clock_hz": eff})
    one, allc = peak_rows(rows)
    per_one = (fpc if one.isa == isa else dp_flops_per_cycle(one.isa)) if one and one.fused else None
    d.measured = {
        "statistic": "maximum of timed blocks (the fastest row of any ISA)",
        "isa": allc.isa if allc else isa,
        "one_core_gflops": one.max if one else None,
        "one_core_n": one.n if one else None,
        "all_cores_gflops": allc.max if allc else None,
        "all_cores_n": allc.n if allc else None,
        "all_cores_threads": allc.threads if allc else None,
        "effective_clock_hz": (one.max * 1e9 / per_one) if one and per_one else None,
        "rows": by_isa,
    }


def _trust(d: Derivation) -> None:
    """Nominal Rpeak is doubted when a measured FMA peak beats it (all cores, or one core its share:
    the cores run faster than the clock stated) or in a VM without cpufreq."""
    problems = []
    if d.measured and d.nominal and d.measured["all_cores_gflops"] and d.cores:
        one_nominal = d.nominal / d.cores
        one_row, all_row = peak_rows(d.rows)
        if all_row.max > d.nominal:
            over = (f"the measured {ISA_LABEL[all_row.isa]}{' FMA' * all_row.fused} peak exceeds it: {all_row.max:.1f} "
                    f"GFLOPS on {plural(all_row.threads, 'thread')} (fastest of {all_row.n} blocks) against "
                    f"{d.nominal:.1f} nominal")
        elif one_row.max > one_nominal:
            over = (f"one core's measured {ISA_LABEL[one_row.isa]}{' FMA' * one_row.fused} peak exceeds its share: "
                    f"{one_row.max:.1f} GFLOPS (fastest of {one_row.n} blocks) against {one_nominal:.1f} nominal per core")
        else:
            over = None
        clock = d.measured["effective_clock_hz"]
        if over and clock:
            problems.append(f"{over}; by FMA throughput the cores run at about {clock / 1e9:.2f} GHz, not the "
                            f"{d.clock_hz / 1e9:.2f} GHz of {d.clock_source}")
        elif over:   # a mul+add (SSE2) row can use extra adders: no clock follows from it
            problems.append(over)
    if d.cpu.get("hypervisor_flag") and not d.cpu.get("cpufreq_max_hz"):
        problems.append("this is a VM (hypervisor flag) without cpufreq, so the clock it shows is the "
                        "hypervisor's figure, not a measured one")
    if problems:
        d.warning = "nominal Rpeak is not trustworthy here: " + "; ".join(problems)


def _basis(d: Derivation) -> None:
    """The peak % of peak is computed against (choose_basis)."""
    # A peak measured while other work ran would make % of peak depend on the load of the moment it
    # was asked for: such rows decide nothing here (undecided unless the nominal Rpeak stands).
    busy = bool(d.rows) and (d.measure_reason or "").startswith(BUSY_PREFIX)
    d.basis, d.gflops, d.basis_reason = choose_basis(d.nominal, d.warning is None, d.reasons.get("nominal_gflops"),
                                                     d.isa, d.cores, None if busy else d.rows, d.measure_reason)
    if d.gflops is None:
        d.reasons["gflops"] = d.reasons.get("nominal_gflops", "unknown")


RULES = (_cpu, _fma_units, _flops_per_cycle, _clock, _nominal, _measured, _trust, _basis)


def derive(cpu: dict, rows: list[PeakRow] | None, measure_reason: str | None) -> dict:
    """The Rpeak section: nominal value with its derivation, measured peak, and which to trust
    (RULES, in order); every value left unknown says why in `reasons`."""
    d = Derivation(cpu, rows, measure_reason)
    for rule in RULES:
        rule(d)
    out = d.section()
    why_null = {"warning": "no warning: nothing contradicts the nominal Rpeak",
                "fma_units": "the FMA-unit count matters only for AVX-512",
                "formula": d.reasons.get("nominal_gflops"), "clock_source": d.reasons.get("clock_hz")}
    why_null["fma_units_source"] = why_null["fma_units_detail"] = why_null["fma_units"]
    for key, value in out.items():
        if value is None and key not in d.reasons:
            d.reasons[key] = why_null.get(key) or "not known"
    return out


def choose_basis(nominal: float | None, trustworthy: bool, why_no_nominal: str | None, isa: str | None,
                 cores: int | None, rows: list[PeakRow] | None, measure_reason: str | None
                 ) -> tuple[str, float | None, str]:
    """(basis, GFLOPS, why) of the peak that % of peak is computed against (one of BASES).
    % of peak must never be flattered: a trusted nominal Rpeak is the basis; otherwise the largest
    peak known is: nominal, the all-core measurement (on every core) and, when that one is missing
    or below TOGETHER x cores x one core's (threads that did not all run at once), cores x one
    core's measurement (one core is the least disturbed by other work). A measurement stands for
    the node's peak only when it included the CPU's widest ISA: an SSE2 rate alone is far below."""
    if nominal is not None and trustworthy:
        return "nominal", nominal, "no reason to doubt the nominal clock"
    doubt = "nominal Rpeak is doubtful" if nominal is not None else f"nominal Rpeak is unknown ({why_no_nominal})"
    one, allc = peak_rows(rows) if rows else (None, None)
    widest = bool(rows) and any(r.isa == isa and r.precision == "double" for r in rows)
    cands: dict[str, tuple[float, str]] = {}
    if nominal is not None:
        cands["nominal"] = (nominal, "the nominal Rpeak")
    left_out = None
    if not rows and (measure_reason or "").startswith(BUSY_PREFIX):
        left_out = f"the measurement decides nothing, since it was {measure_reason}"
    elif not rows:
        left_out = f"nothing was measured ({measure_reason or 'no measurement'})"
    elif not widest:
        left_out = (f"the measurement did not include {ISA_LABEL.get(isa, isa)}, the CPU's widest ISA, so it "
                    "cannot stand for the peak")
    else:
        if allc and cores and allc.threads >= cores:
            cands["measured"] = (allc.max, f"the measured all-core FMA peak ({ISA_LABEL[allc.isa]}, fastest of "
                                           f"{allc.n} blocks on {plural(allc.threads, 'thread')})")
        elif allc and cores:
            left_out = f"the all-core row ran on {plural(allc.threads, 'thread')} for {cores} cores"
        if one and cores and (left_out or allc.max < TOGETHER * cores * one.max):
            if not left_out:
                left_out = (f"the all-core row reached {100 * allc.max / (cores * one.max):.0f}% of {cores} x one "
                            "core's: its threads did not all run at once")
            cands["measured per core"] = (one.max * cores, f"{cores} cores x one core's measured FMA peak "
                                                           f"({ISA_LABEL[one.isa]}, {one.max:.1f} GFLOPS, fastest of "
                                                           f"{one.n} blocks)")
    if not cands:
        return "nominal", None, f"no peak is known: {doubt} and {left_out}"
    basis = max(cands, key=lambda k: cands[k][0])
    value, what = cands[basis]
    others = [f"{d} {v:.1f}" for k, (v, d) in cands.items() if k != basis]
    return basis, value, (f"{doubt}, so % of peak uses the largest peak known: {what} = {value:.1f} GFLOPS"
                          + (f" (against {'; '.join(others)})" if others else "")
                          + (f"; {left_out}" if left_out else ""))
