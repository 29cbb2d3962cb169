"""The survey's own sections: the cluster summary with "what limits this
cluster", and the list of steps (interrupted or failed ones included)."""

from __future__ import annotations

from rmax.inventory import load
from rmax.report.section import Section, Table
from rmax.store.runs import RunRecord
from rmax.units import to_base
from rmax.survey.headline import by_role, cluster_peak, headline, peak_beaten, percent_of_peak, shown_metric


def what_limits(rows: list[dict], runs: list[RunRecord]) -> list[str]:
    """Sentences, each with its numbers, on whether compute, memory or network bounds HPL here."""
    beaten = peak_beaten(rows)
    out = [beaten] if beaten else []
    hpl = by_role(rows, "hpl_rmax")
    dgemm = by_role(rows, "dgemm_bound")
    peak = cluster_peak(rows)
    if hpl and dgemm and dgemm["value"]:
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
    if triad and peak and triad["value"]:
        # Bytes per flop the memory can feed: DGEMM reuses each byte many times, STREAM-like codes do not.
        bpf = to_base(triad["value"], triad["unit"]) / to_base(peak["value"], peak["unit"])
        out.append(f"Memory: STREAM Triad {triad['value']:.0f} {triad['unit']} against a {peak['value']:.0f} "
                   f"{peak['unit']} peak is {bpf:.3f} bytes per flop; codes needing more than that (sparse, "
                   "stencil) are memory-bound here, HPL is not.")
    lat = by_role(rows, "mpi_latency")
    bw = by_role(rows, "mpi_bandwidth")
    if lat and bw:
        out.append(f"Network: {lat['value']:.2f} us latency and {bw['value']:.0f} MB/s at 1 MiB between nodes; "
                   "see the HPL model (rmax model hpl) for the share of HPL time this costs at larger scale.")
    elif len({h for r in runs for h in r.hosts}) <= 1:
        out.append("Network: one node only, so no interconnect was measured.")
    return out


def busy_runs(runs: list[RunRecord]) -> list[tuple[RunRecord, load.Verdict]]:
    """The runs measured while other processes kept their node busy, with how busy (their stored load)."""
    verdicts = [(r, load.verdict(r.load)) for r in runs]
    return [(r, v) for r, v in verdicts if v and v.busy]


def busy_warning(busy: list[tuple[RunRecord, load.Verdict]], of: int) -> str:
    each = "; ".join(f"{r.kind} {r.id[:8]}" + (f" on {r.hostname}" if r.hostname else "")
                     + f" ({v.others:.1f} CPUs over {v.seconds:.0f} s, load average {v.load1:.1f})" for r, v in busy)
    return (f"{len(busy)} of {of} runs {'was' if len(busy) == 1 else 'were'} measured on a busy node, other "
            f"processes using CPUs beside them: {each}. Their figures, and any % of peak from them, may be "
            "another user's slowdown rather than this cluster's.")


def summary_section(survey: RunRecord, runs: list[RunRecord]) -> Section:
    rows = headline(runs)
    pct = percent_of_peak(rows)
    if pct:
        rows.append(pct)
    sec = Section(key="summary", title="Cluster summary", order=0)
    s = survey.summary
    from rmax.survey.workflow import lost_line, missing_steps, partial_line

    if s.get("lost"):   # first of all: the nodes this survey went on without
        sec.warnings.append(lost_line(s["lost"]))
    if missing_steps(s.get("steps", [])):
        sec.warnings.append(partial_line(s.get("steps", [])))   # then what this survey lacks
    busy = busy_runs(runs)
    if busy:
        sec.warnings.append(busy_warning(busy, len(runs)))
    nodes = s.get("nodes") or sorted({h for r in runs for h in r.hosts})
    sec.notes.append(f"{len(nodes)} node(s): {', '.join(nodes) or 'none recorded'}"
                     + (f"; {s['ranks']} ranks." if s.get("ranks") else "; ranks not recorded (the survey did not finish)."))
    limits = what_limits(rows, runs)
    sec.tables.append(Table(["What limits this cluster"], [[t] for t in limits] or [["Not enough measurements to say."]],
                            answer=True))
    busy_ids = {r.id for r, _ in busy}

    def caveat(row: dict) -> str:   # a figure from a busy run (HPL % of peak names both of its runs)
        return "; from a run on a busy node" if busy_ids & {row.get("run"), *row.get("runs", ())} else ""

    sec.tables.append(Table(["Metric", "Value", "Unit", "Statistic"],
                            [[shown_metric(r, rows), f"{r['value']:.4g}", r["unit"], r["statistic"] + caveat(r)]
                             for r in rows], answer=True))
    sec.data["headline"] = rows
    return sec


def steps_section(survey: RunRecord, runs: list[RunRecord]) -> Section:
    sec = Section(key="steps", title="Survey steps", order=95)
    steps = survey.summary.get("steps", [])
    rows = [[e["step"], e.get("title", ""), e["status"], f"{e['seconds']:.1f}" if "seconds" in e else "",
             e.get("reason") or e.get("error") or ""] for e in steps]
    if survey.status == "interrupted":
        sec.notes.append("This survey was interrupted; the steps that finished before are shown.")
    sec.tables.append(Table(["Step", "What", "Status", "Seconds", "Note"], rows))
    sec.data["steps"] = steps
    return sec
