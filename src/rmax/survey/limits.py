"""What limits a surveyed cluster, from its headline rows, and which of its runs were measured on a
busy node: one reading for the terminal summary (survey/summary.py) and the report
(report/summary.py), so that they say the same. A figure measured on a busy node explains
nothing: its sentence says so instead of reading a bound into another user's slowdown."""

from __future__ import annotations

from rmax.inventory import load
from rmax.store.runs import RunRecord
from rmax.survey.headline import by_role, cluster_peak, peak_beaten, percent_of_peak
from rmax.units import to_base


def busy_runs(runs: list[RunRecord]) -> list[tuple[RunRecord, load.Verdict]]:
    """The runs measured while other processes kept their node busy, with how busy (their stored load)."""
    verdicts = [(r, load.verdict(r.load)) for r in runs]
    return [(r, v) for r, v in verdicts if v and v.busy]


def busy_warning(busy: list[tuple[RunRecord, load.Verdict]], of: int, most: int | None = None) -> str:
    """One line naming the busy runs (the first `most` of them, and how many more)."""
    shown = busy if most is None else busy[:most]
    each = "; ".join(f"{r.kind} {r.id[:8]}" + (f" on {r.hostname}" if r.hostname else "") + f" ({v.line()})"
                     for r, v in shown) + (f"; and {len(busy) - len(shown)} more" if len(shown) < len(busy) else "")
    return (f"{len(busy)} of {of} runs {'was' if len(busy) == 1 else 'were'} measured on a busy node: {each}. Their "
            "figures, and any % of peak from them, may be another user's slowdown rather than this cluster's.")


def what_limits(rows: list[dict], runs: list[RunRecord], busy: set[str] = frozenset()) -> list[str]:
    """Sentences, each with its numbers, on whether compute, memory or network bounds HPL here;
    `busy`: the ids of runs measured on a busy node, whose figures are named, not explained."""
    def from_busy(*found) -> list[str]:
        return [f"{r['metric']} ({r['value']:.4g} {r['unit']})" for r in found
                if r and busy & {r.get("run"), *r.get("runs", ())}]

    beaten = peak_beaten(rows)
    out = [beaten] if beaten else []
    hpl = by_role(rows, "hpl_rmax")
    dgemm = by_role(rows, "dgemm_bound")
    peak = cluster_peak(rows)
    if from_busy(hpl, dgemm):
        out.append(f"Compute: not judged, {' and '.join(from_busy(hpl, dgemm))} measured on a busy node; run the "
                   "survey again on quiet nodes.")
    elif hpl and dgemm and dgemm["value"]:
        frac = hpl["value"] / dgemm["value"]
        verdict = ("compute bounds HPL here: it runs close to the DGEMM rate of all cores"
                   if frac >= 0.85 else
                   "HPL falls well short of the DGEMM bound: panel factorisation, pivoting and communication "
                   "cost more than the trailing update at this N (a larger N or another grid should help)")
        where = ("at HPL's shape" if dgemm.get("at_hpl_shape")
                 else "from the best DGEMM size, not HPL's shape: the share is approximate")
        out.append(f"HPL reaches {hpl['value']:.1f} GFLOPS, {100 * frac:.0f}% of the DGEMM bound "
                   f"({dgemm['value']:.1f} GFLOPS, {where}): {verdict}.")
    elif hpl and peak and not beaten:
        out.append(f"HPL reaches {hpl['value']:.1f} GFLOPS, {100 * hpl['value'] / peak['value']:.0f}% of the "
                   f"peak used for % of peak ({peak['value']:.1f} GFLOPS); no DGEMM run to separate compute "
                   "from overheads.")
    triad = by_role(rows, "triad")
    peak = by_role(rows, "peak_basis")   # bytes per flop: one node's memory against the same node's peak
    if from_busy(triad, peak):
        out.append(f"Memory: not judged, {' and '.join(from_busy(triad, peak))} measured on a busy node.")
    elif triad and peak and triad["value"]:
        # Bytes per flop the memory can feed: DGEMM reuses each byte many times, STREAM-like codes do not.
        bpf = to_base(triad["value"], triad["unit"]) / to_base(peak["value"], peak["unit"])
        out.append(f"Memory: STREAM Triad {triad['value']:.0f} {triad['unit']} against a {peak['value']:.0f} "
                   f"{peak['unit']} peak is {bpf:.3f} bytes per flop; codes needing more than that (sparse, "
                   "stencil) are memory-bound here, HPL is not.")
    lat = by_role(rows, "mpi_latency")
    bw = by_role(rows, "mpi_bandwidth")
    if from_busy(lat, bw):
        out.append(f"Network: not judged, {' and '.join(from_busy(lat, bw))} measured on a busy node.")
    elif lat and bw:
        out.append(f"Network: {lat['value']:.2f} us latency and {bw['value']:.0f} MB/s at 1 MiB between nodes; "
                   "see the HPL model (rmax model hpl) for the share of HPL time this costs at larger scale.")
    elif len({h for r in runs for h in r.hosts}) <= 1:
        out.append("Network: one node only, so no interconnect was measured.")
    return out


def lead(rows: list[dict], limits: list[str]) -> str | None:
    """The survey's answer in a line, before any table: Rmax, its % of peak, and what limits it."""
    hpl = by_role(rows, "hpl_rmax")
    if not hpl:
        return None
    pct = percent_of_peak(rows)
    compute = next((line for line in limits if line.startswith(("HPL reaches", "Compute:", "HPL's"))), None)
    return (f"Rmax {hpl['value']:.4g} GFLOPS ({hpl['metric'].removeprefix('HPL Rmax ').strip('()')})"
            + (f", {pct['value']:.1f}% of peak" if pct else "") + (f". {compute}" if compute else ""))
