"""A tuning session: the trajectory of its trials and what it found."""

from __future__ import annotations

from rmax.report import plots
from rmax.report.section import Section, Table, builder
from rmax.store.runs import RunRecord
from rmax.tune.steps import COLUMNS as STEP_COLUMNS, TITLE as STEP_TITLE, cells as step_cells


@builder("tune")
def tuning(runs: list[RunRecord]) -> list[Section]:
    sec = Section(key="tune", title="HPL tuning", order=65)
    data = []
    for r in runs:
        tests = sorted(r.samples.get("trial_runs", []), key=lambda t: t["started_at"])
        xs, ys, best_x, best_y, best = [], [], [], [], 0.0
        for i, t in enumerate(tests, 1):
            g = t["summary"].get("gflops") if t["status"] == "ok" else None
            data.append({"session": r.id, "trial": i, "status": t["status"], "gflops": g,
                         **{k: t["params"].get(k) for k in ("code", "n", "nb", "p", "q")}})
            if g is not None:
                xs.append(i)
                ys.append(g)
                best = max(best, g)
                best_x.append(i)
                best_y.append(best)
        if xs:
            sec.plots.append(plots.line_plot({"trial": (xs, ys), "best so far": (best_x, best_y)}, "trial",
                                             "GFLOPS", title=f"Tuning trajectory ({r.summary.get('strategy', '')})"))
        b, s = r.summary.get("best") or {}, r.summary.get("start") or {}
        if b:
            sec.tables.append(Table(["Start (GFLOPS)", "Best (GFLOPS)", "Gain", "Significant", "Best N / NB / grid / code",
                                     "Trials", "Noise (CV)"],
                                    [[f"{s.get('gflops') or 0:.2f}", f"{b['gflops']:.2f}",
                                      f"{b['gain_pct']:+.1f}%" if b.get("gain_pct") is not None else "—",
                                      "yes" if b.get("significant") else "no",
                                      f"{b['n']} / {b['nb']} / {b['grid'][0]}x{b['grid'][1]} / {b['code']}",
                                      str(r.summary.get("trials")),
                                      f"{100 * r.summary['noise_cv']:.1f}%" if r.summary.get("noise_cv") else "—"]],
                                    f"best: {b.get('statistic', '')}"))
        steps = r.summary.get("steps") or []
        if steps:
            sec.tables.append(Table(list(STEP_COLUMNS), [step_cells(x) for x in steps], STEP_TITLE))
        effects = r.summary.get("effects") or []
        if effects:
            sec.tables.append(Table(["Parameter", "Paired effect [95% interval]", "Best value", "Beyond the noise"],
                                    [[e["param"], f"{100 * e['effect']:+.1f}% [{100 * e['interval'][0]:+.1f}%, "
                                                  f"{100 * e['interval'][1]:+.1f}%]" if e.get("interval")
                                      else f"{100 * e['effect']:.1f}%", str(e["best_value"]),
                                      {True: "yes", False: "no"}.get(e.get("beyond_noise"), "not judged (noise "
                                                                                           "not measured)")]
                                     for e in effects],
                                    "what mattered most: an effect counts only measured in pairs, its interval "
                                    "excluding no change"))
        if r.status != "ok":
            sec.notes.append(f"session {r.id[:8]} is {r.status}: {r.error or ''} (rmax tune --resume {r.id[:8]})")
    sec.data["tuning_trials"] = data
    return [sec]
