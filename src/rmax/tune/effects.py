"""Which parameters mattered: an effect size per parameter from the trials.

The clean comparison is two candidates that differ in that parameter alone, at
the same N (coordinate descent produces exactly these). For each parameter the
effect is the mean, over such contexts (all other parameters fixed), of the
spread between its best and worst value, relative to the best: "changing NB
alone moved GFLOPS by 18%". Where no such pair exists (a Bayesian search rarely
makes them), the spread of the parameter's marginal means is used instead, and
the method says so, but only when the trials separate the parameter from every
other one: each of its values must meet the same values of every other parameter
(a crossed design); if another parameter moved with it (the stock and the best
configuration, or one grid tried only at one NB), the effect cannot be told apart
and none is claimed. An effect is larger than the noise only when it exceeds what
two trials differ by at 95 % from the measured run-to-run noise alone
(1.96 x sqrt(2) x CV, less over several contexts); without a measured noise it is
not judged."""

from __future__ import annotations

import math
from collections import defaultdict

from rmax.tune.space import PARAMS, describe, key


def _means(trials) -> dict:
    """key -> (candidate, mean GFLOPS) over the ok trials."""
    acc: dict = {}
    for cand, g in trials:
        k = key(cand)
        c, vals = acc.setdefault(k, (cand, []))
        vals.append(g)
    return {k: (c, sum(v) / len(v)) for k, (c, v) in acc.items()}


def _confounded(param: str, cands: list[dict]) -> bool:
    """True unless every value of `param` met the same values of every other parameter over
    these candidates: otherwise a marginal mean carries another parameter's effect."""
    values = {describe(c, param) for c in cands}
    if len(values) < 2:
        return True
    for other in PARAMS:
        if other == param:
            continue
        seen: dict = {}
        for c in cands:
            seen.setdefault(describe(c, param), set()).add(describe(c, other))
        if len({frozenset(v) for v in seen.values()}) > 1:
            return True
    return False


NOISE_FACTOR = 1.96 * math.sqrt(2)   # two trials' difference at 95 % from noise alone, in units of the CV


def beyond_noise(effect: float, noise_cv: float | None, contexts: int) -> bool | None:
    """Whether an effect is larger than the run-to-run noise makes; None when it was not measured."""
    if not noise_cv:
        return None
    return effect > NOISE_FACTOR * noise_cv / math.sqrt(max(contexts, 1))


def effect_sizes(trials: list[tuple[dict, float]], noise_cv: float | None = None) -> list[dict]:
    """Per parameter: effect (relative spread), method, contexts, best value; largest first."""
    means = _means(trials)
    out = []
    for param in PARAMS:
        contexts = defaultdict(dict)   # everything but this parameter -> {value: (cand, mean)}
        for k, (cand, m) in means.items():
            rest = tuple(v for p, v in zip(("n",) + PARAMS, k) if p != param)
            contexts[rest][k[1 + PARAMS.index(param)]] = (cand, m)
        spreads, best_votes = [], defaultdict(int)
        for vals in contexts.values():
            if len(vals) >= 2:
                hi = max(vals.values(), key=lambda cm: cm[1])
                lo = min(m for _, m in vals.values())
                spreads.append((hi[1] - lo) / hi[1])
                best_votes[describe(hi[0], param)] += 1
        method = "one-at-a-time"
        if not spreads:
            # Marginal means: every trial at the most common N, grouped by this parameter's value.
            ns = defaultdict(list)
            for c, m in means.values():
                ns[c["n"]].append((c, m))
            group = max(ns.values(), key=len, default=[])
            if _confounded(param, [c for c, _ in group]):
                continue
            by_value = defaultdict(list)
            for c, m in group:
                by_value[describe(c, param)].append(m)
            if len(by_value) >= 2:
                vm = {v: sum(ms) / len(ms) for v, ms in by_value.items()}
                top = max(vm.values())
                spreads = [(top - min(vm.values())) / top]
                best_votes[max(vm, key=vm.get)] += 1
                method = "marginal means"
        if not spreads:
            continue
        effect = sum(spreads) / len(spreads)
        out.append({"param": param, "effect": effect, "method": method, "contexts": len(spreads),
                    "best_value": max(best_votes, key=best_votes.get),
                    "in_noise_units": effect / noise_cv if noise_cv else None,
                    "beyond_noise": beyond_noise(effect, noise_cv, len(spreads))})
    return sorted(out, key=lambda e: -e["effect"])
