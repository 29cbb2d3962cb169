"""Which parameters mattered: only what was measured in pairs.

A parameter's effect is read from the blocks (rmax.tune.noise) in which the challenger differed
from the incumbent in that parameter alone, at one N: the paired ratio of the challenger to the
incumbent with its 95 % interval. A parameter is credited only when such an interval excludes 1
(no change); among its blocks, the one whose interval lies furthest from 1 is shown. A block
that changed several parameters at once (the confirmation at full N), or that the machine's
changes or the budget left undecided, credits nothing. Parameters that cannot change the run on
the grid at hand (rmax.tune.equivalence) are never searched, so never credited."""

from __future__ import annotations

from rmax.tune.space import PARAMS, describe


def _changed(inc: dict, cand: dict) -> list[str]:
    return [p for p in PARAMS if inc.get(p) != cand.get(p)]


def paired_effects(duels) -> list[dict]:
    """Per parameter changed alone in a decided block: its strongest paired effect, with its
    interval and whether the interval excludes no change; strongest first."""
    best: dict = {}
    for d in duels:
        v = d.verdict
        if v is None or d.incumbent is None or not v.decided or v.lo is None:
            continue
        if d.incumbent.get("n") != d.challenger.get("n"):
            continue
        changed = _changed(d.incumbent, d.challenger)
        if len(changed) != 1:
            continue
        param = changed[0]
        excludes = v.lo > 1 or v.hi < 1
        # How far the interval stays from 1 (negative: it holds 1).
        margin = max(v.lo - 1, 1 - v.hi)
        e = {"param": param, "effect": v.ratio - 1, "interval": [v.lo - 1, v.hi - 1], "pairs": v.samples,
             "from": describe(d.incumbent, param), "to": describe(d.challenger, param),
             "best_value": describe(d.challenger if v.ratio > 1 else d.incumbent, param),
             "n": d.challenger["n"], "beyond_noise": excludes, "method": "paired block", "margin": margin}
        if param not in best or margin > best[param]["margin"]:
            best[param] = e
    return sorted(best.values(), key=lambda e: (not e["beyond_noise"], -abs(e["effect"])))


def text(e: dict) -> str:
    lo, hi = e["interval"]
    return (f"{e['param']} {e['from']} -> {e['to']}: {100 * e['effect']:+.1f}% "
            f"[{100 * lo:+.1f}%, {100 * hi:+.1f}%] ({e['pairs']} pairs at N {e['n']})")
