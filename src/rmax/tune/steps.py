"""The session's steps, in the shape of Table 1 of the Kronos article (Eadline and Layton): each
test, what was changed, N, NB, P x Q and GFLOPS; here also the paired gain over the
configuration it was compared with in its block, its 95 % interval, whether that interval
excludes no change (rmax.tune.noise) and whether the change was kept.

Row 0 is the stock HPL.dat. Every duel a strategy decided follows, in order; where a strategy
starts its search from a configuration no duel produced (its heuristic start, at the reduced N),
a row says so, compared with nothing. Gains are only ever between two configurations at the
same N: a rate at another N differs by the N alone."""

from __future__ import annotations

from rmax.tune.evaluator import Evaluator
from rmax.tune.space import PARAMS, describe, grid_text, key

TITLE = ("steps (as Table 1 of the Kronos article): each comparison is a block of alternating runs at one N; "
         "GFLOPS is the challenger's mean in its block; the gain is the paired ratio over what it was compared "
         "with, with its 95% interval; significant: the interval excludes no change")
COLUMNS = ("Step", "Change", "N", "NB", "P x Q", "GFLOPS", "Pairs", "Gain", "95% interval", "Significant", "Kept",
           "Why")


def change_text(old: dict, new: dict) -> str:
    """What differs from old to new, as "param: old -> new" parts."""
    diff = [f"{p}: {describe(old, p)} -> {describe(new, p)}" for p in ("n", *PARAMS) if old.get(p) != new.get(p)]
    return ", ".join(diff) or "nothing"


def _why(v, k: int) -> str:
    if v.disturbed:
        return "undecided: the machine kept changing during its blocks"
    if v.unfinished:
        return f"undecided: the budget ran out after {k} pair(s)"
    if v.invalid:
        return "the challenger failed or FAILED its residual check"
    if v.better and v.incumbent_mean is None:
        return "the incumbent failed when measured again"
    if v.better:
        return "better in pairs"
    if v.worse:
        return "worse in pairs"
    if v.hi is not None and v.hi < 1.01:
        return f"no gain above 1% possible after {k} pairs"
    return f"not significant after {k} pairs"


def _row(index: int, cand: dict, change: str, gflops: float | None, k: int, **rest) -> dict:
    return {"index": index, "change": change, "n": cand["n"], "nb": cand["nb"], "grid": list(cand["grid"]),
            "gflops": gflops, "trials": k, "statistic": f"mean of {k} run(s) in its block" if gflops is not None else "",
            "gain_pct": None, "interval_pct": None, "p_value": None, "significant": None, "kept": None, "why": "",
            "block": None,
            **rest}


def build(ev: Evaluator, stock: dict | None) -> list[dict]:
    """The steps of a session whose evaluator is `ev`, starting from the stock candidate."""
    out: list[dict] = []
    kept: set = set()              # configurations a row has made incumbent
    if stock is not None and ev.samples(stock):
        s = ev.samples(stock)
        out.append(_row(0, stock, "stock HPL.dat (the start)", s[0], 1, kept=True,
                        statistic="its first run"))
        kept.add(key(stock))
    for d in ev.duels:
        if d.verdict is None:      # measured, compared with nothing
            s = d.challenger_runs or ev.samples(d.challenger)
            out.append(_row(len(out), d.challenger, d.label or "measured", sum(s) / len(s) if s else None, len(s),
                            why="no valid start at this N to compare with"))
            continue
        inc, v = d.incumbent, d.verdict
        if key(inc) not in kept:
            out.append(_row(len(out), inc, "search starts here: " + (change_text(stock, inc) if stock else "start"),
                            v.incumbent_mean, d.incumbent_samples, kept=True,
                            why="the strategy's starting point, not a duel"))
            kept.add(key(inc))
        change = change_text(inc, d.challenger)
        paired = v.ratio is not None
        out.append(_row(len(out), d.challenger, f"{d.label}: {change}" if d.label else change, v.mean, v.samples,
                        gain_pct=100 * (v.ratio - 1) if paired else None,
                        interval_pct=[100 * (v.lo - 1), 100 * (v.hi - 1)] if v.lo is not None else None,
                        p_value=v.p_value if v.p_value == v.p_value else None,
                        significant=(v.better or v.worse) if v.lo is not None else None, kept=v.better,
                        why=_why(v, v.samples), block=list(d.block) if d.block else None))
        if v.better:
            kept.add(key(d.challenger))
    return out


def cells(step: dict) -> list[str]:
    """A step as the table's text cells (the terminal and the report print the same)."""
    def yes(x):
        return "—" if x is None else ("yes" if x else "no")

    g = step["gflops"]
    return [str(step["index"]), step["change"], str(step["n"]), str(step["nb"]), grid_text(step["grid"]),
            f"{g:.3f}" if g is not None else "—", str(step["trials"]),
            f"{step['gain_pct']:+.1f}%" if step["gain_pct"] is not None else "—",
            "[{:+.1f}%, {:+.1f}%]".format(*step["interval_pct"]) if step.get("interval_pct") else "—",
            yes(step["significant"]), yes(step["kept"]), step["why"]]


def render(steps: list[dict]) -> list[str]:
    """The steps as fixed-width text lines (the last column runs free)."""
    rows = [list(COLUMNS)] + [cells(s) for s in steps]
    widths = [max(len(r[i]) for r in rows) for i in range(len(COLUMNS))]
    return ["  ".join(c.ljust(w) if i in (1, len(COLUMNS) - 1) else c.rjust(w)
                      for i, (c, w) in enumerate(zip(r, widths))).rstrip() for r in rows]
