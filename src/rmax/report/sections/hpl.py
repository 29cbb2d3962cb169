"""HPL results: every test, with its phase breakdown when the engine gives one."""

from __future__ import annotations

from rmax.report import plots
from rmax.report.section import Section, Table, builder
from rmax.store.runs import RunRecord


@builder("hpl", "hpl-test")
def hpl(runs: list[RunRecord]) -> list[Section]:
    tests = [r for r in runs if r.kind == "hpl-test"]
    execs = {r.id: r for r in runs if r.kind == "hpl"}
    sec = Section(key="hpl", title="HPL", order=60)
    rows, data = [], []
    for t in tests:
        p, s = t.params, t.summary
        engine = execs[t.parent].params.get("engine") if t.parent in execs else ""
        rows.append([p["code"], str(p["n"]), str(p["nb"]), f"{p['p']} x {p['q']}", f"{s['time_s']:.2f}",
                     f"{s['gflops']:.2f}", f"{s['residual']:.3g}" if s.get("residual") is not None else "—",
                     s.get("verdict", ""), engine])
        data.append({"run": t.id, "engine": engine, **{k: p[k] for k in ("code", "n", "nb", "p", "q")},
                     "time_s": s["time_s"], "gflops": s["gflops"], "residual": s.get("residual"),
                     "verdict": s.get("verdict")})
        phases = s.get("phases")
        if isinstance(phases, dict) and phases:
            names = list(phases)
            vals = [phases[n]["max"] if isinstance(phases[n], dict) else phases[n] for n in names]
            if all(isinstance(v, (int, float)) for v in vals):
                sec.plots.append(plots.bar_plot(names, vals, "seconds (max over ranks)",
                                                f"Where the time went: {p['code']} N={p['n']}"))
    sec.tables.append(Table(["T/V", "N", "NB", "P x Q", "Time (s)", "GFLOPS", "Residual", "Check", "Engine"], rows))
    if not tests:
        sec.notes.append("No HPL test finished in this survey.")
    sec.data["hpl_tests"] = data
    return [sec]
