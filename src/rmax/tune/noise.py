"""Is a challenger really better than the incumbent? Decided only in pairs.

Blind HPL runs give "very non-deterministic results" (Richard et al., I-Cluster), and the machine
may be shared: a run measured minutes ago under another load says nothing about a run now. So
every comparison is a block of alternating runs at one N, incumbent first and last:

    incumbent, challenger, incumbent, challenger, ..., incumbent

Pair i is the incumbent's run i and the challenger's run right after it; the test is a paired
t-test on the log ratios of the pairs (the load a pair shares cancels), and the verdict is the
ratio's 95 % interval: above 1, better (kept); below 1, worse; within 1 % of 1 or below it,
no gain worth keeping; else more pairs, up to the cap, after which it is not significant (not
kept). At least MIN_PAIRS pairs decide anything, so nothing is dropped on one run. No sample is
ever compared with one from another block.

The incumbent's runs also watch the machine (rmax.tune.drift): one outside its band is run once
more; back within, it was a one-off (a stalled run, set aside and replaced by the new run); out
again, the machine changed (every challenger run is between two incumbent runs, so a change
during the block shows) and the block is set aside undecided; the incumbent is measured alone until it is back at its level, or steady
at a new one, or else the band is widened; then the block is run again, from scratch."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from rmax.stats import differ_paired, t_quantile
from rmax.tune.evaluator import BudgetExhausted, Duel, Evaluator

DEFAULT_CAP = 5          # pairs per block at most (--repeats)
MIN_PAIRS = 3            # pairs before any verdict: a t interval from fewer is too wide to be honest
BLOCK_RUNS = 2 * MIN_PAIRS + 1   # the shortest block: its pairs and the closing incumbent run
NO_GAIN = 0.01           # an interval whose top is below +1 % cannot show a gain worth keeping
ATTEMPTS = 3             # blocks set aside because the machine changed, before giving up undecided
SETTLE_RUNS = 4          # incumbent runs spent waiting for the machine to settle


@dataclass
class Verdict:
    better: bool             # the paired interval is above 1: kept
    invalid: bool            # the challenger failed (twice) or FAILED its residual check
    mean: float | None       # the challenger's mean GFLOPS in the block
    incumbent_mean: float | None
    p_value: float = math.nan
    samples: int = 0         # pairs measured
    unfinished: bool = False  # the budget ran out before a decision: not kept
    ratio: float | None = None   # challenger / incumbent: the geometric mean of the pairs' ratios
    lo: float | None = None      # its 95 % interval
    hi: float | None = None
    disturbed: bool = False  # the machine kept changing: undecided after ATTEMPTS blocks
    worse: bool = False      # the interval is below 1

    @property
    def decided(self) -> bool:
        return not (self.unfinished or self.disturbed or self.invalid)

    def evidence(self) -> str:
        """What the verdict rests on: the pairs' ratio and its interval, or a default (the
        incumbent's own run failed: a loaded or stalled node), which has no ratio to show."""
        if self.ratio is None:
            return f"by default, the incumbent's run failed ({self.samples} pair(s) before it)"
        if self.lo is None:
            return f"x{self.ratio:.3f} over {self.samples} pair, no interval"
        return f"x{self.ratio:.3f} [{self.lo:.3f}, {self.hi:.3f}] over {self.samples} pairs"


def paired_ratio(chal: list[float], inc: list[float]) -> tuple[float, float | None, float | None, float]:
    """(ratio, lo, hi, p): the geometric mean of chal[i] / inc[i] with its 95 % t interval and the
    paired test's p-value; with one pair, no interval."""
    logs = [math.log(a / b) for a, b in zip(chal, inc)]
    k = len(logs)
    m = sum(logs) / k
    if k < 2:
        return math.exp(m), None, None, math.nan
    sd = math.sqrt(sum((x - m) ** 2 for x in logs) / (k - 1))
    half = t_quantile(0.975, k - 1) * sd / math.sqrt(k)
    return math.exp(m), math.exp(m - half), math.exp(m + half), differ_paired(chal, inc)[1]


def noise_cv(ev: Evaluator) -> float | None:
    """Run-to-run noise: how far the incumbent's runs stray from its level between blocks."""
    return ev.monitor.noise()


class Disturbed(Exception):
    """The machine changed during a block: its pairs decide nothing."""


def _mean(x: list[float]) -> float | None:
    return sum(x) / len(x) if x else None


def _watch(ev: Evaluator, inc: dict) -> float | None:
    """One incumbent run of a block, watched. Outside its band, one more run tells a one-off (a
    stalled run: the next is back within the band, and takes its place) from a change of the
    machine (the next is out too: raises Disturbed, naming the first)."""
    mon = ev.monitor
    g = ev.sample(inc)
    if g is None or mon.observe(inc, g):
        return g
    odd = ev.history[-1]
    again = ev.sample(inc)
    if again is not None and mon.observe(inc, again):
        mon.oneoffs.append(odd.index)
        ev.say(f"      trial {odd.index}: the incumbent ran {100 * (g / mon.level(inc) - 1):+.0f}% from its level, "
               f"the next run is back within ±{100 * mon.band():.0f}%: a one-off, set aside")
        return again
    from rmax.tune.drift import Change

    mon.changes.append(Change(odd.at, odd.index, g, mon.level(inc), mon.band()))
    ev.say(mon.changes[-1].text() + (f"; trial {ev.history[-1].index} too" if again is not None else ""))
    raise Disturbed


def settle(ev: Evaluator, inc: dict) -> None:
    """After a change: measure the incumbent alone until it is back within its band, or steady at a
    new level (three runs agreeing within the band); else widen the band and take the runs' median."""
    mon, change, runs = ev.monitor, ev.monitor.changes[-1], []
    start = ev.history[-1].at
    for _ in range(SETTLE_RUNS):
        try:
            g = ev.sample(inc)
        except BudgetExhausted:
            change.settled = "the budget ran out while it settled"
            raise
        if g is None:
            return
        waited = ev.history[-1].at - start
        if mon.within(inc, g):
            change.settled = f"back at its level after {waited:.0f} s"
            break
        runs.append(g)
        last = runs[-3:]
        if len(last) == 3 and max(last) / min(last) - 1 <= mon.band():
            mon.set_level(inc, last)
            change.settled = f"steady at a new level, {100 * (ev.monitor.level(inc) / change.level - 1):+.0f}%, after {waited:.0f} s"
            break
    else:
        mon.widen *= 2
        mon.set_level(inc, runs)
        change.settled = (f"still moving after {SETTLE_RUNS} runs: the band is widened to ±{100 * mon.band():.0f}% "
                          "around their median")
    ev.say(f"  ... {change.settled}")


def _block(ev: Evaluator, cand: dict, inc: dict, cap: int, a: list, b: list) -> Verdict:
    """One block of pairs (see the module's note), its runs gathered in a (the incumbent's) and b."""
    g = _watch(ev, inc)
    if g is None:       # the incumbent itself went bad: the challenger wins by default
        return Verdict(True, False, None, None)
    a.append(g)
    while True:
        gb = ev.sample(cand)
        if gb is None:
            return Verdict(False, True, _mean(b), _mean(a), samples=len(b))
        b.append(gb)
        ga = _watch(ev, inc)        # the next pair's incumbent run, and the bracket closing this one
        if ga is None:
            return Verdict(True, False, _mean(b), None, samples=len(b))
        a.append(ga)
        v = _verdict(a, b)
        k = v.samples
        if k < MIN_PAIRS:
            continue
        if v.better or v.worse or v.hi < 1 + NO_GAIN or k >= cap:
            return v


def _verdict(a: list, b: list, **kw) -> Verdict:
    """The verdict of the pairs (a[i], b[i]) so far."""
    k = min(len(a), len(b))
    if not k:
        return Verdict(False, False, _mean(b), _mean(a), **kw)
    r, lo, hi, p = paired_ratio(b[:k], a[:k])
    return Verdict(lo is not None and lo > 1, False, _mean(b), _mean(a), p, k, ratio=r, lo=lo, hi=hi,
                   worse=hi is not None and hi < 1, **kw)


def challenge(ev: Evaluator, cand: dict, incumbent: dict, cap: int = DEFAULT_CAP, label: str = "") -> Verdict:
    """Measure cand against incumbent in a block of pairs, as described above; every strategy's
    duels pass through here, so here each is recorded for the steps table (rmax.tune.steps),
    `label` naming one of the session's own (the confirmation at full N)."""
    cap = max(cap, MIN_PAIRS)
    for attempt in range(ATTEMPTS):
        a: list[float] = []
        b: list[float] = []
        first = len(ev.history) + 1
        try:
            v = _block(ev, cand, incumbent, cap, a, b)
        except Disturbed:
            ev.monitor.changes[-1].retried.append(dict(cand))
            try:
                settle(ev, incumbent)
            except BudgetExhausted:
                _record(ev, incumbent, cand, Verdict(False, False, None, None, unfinished=True, disturbed=True), label)
                raise
            if attempt + 1 < ATTEMPTS:
                ev.say("  ... the comparison it interrupted starts again")
            continue
        except BudgetExhausted:
            v = _verdict(a, b, unfinished=True)
            v.better = v.worse = False
            v.invalid = ev.known_bad(cand)
            _record(ev, incumbent, cand, v, label, a, b, first)
            raise
        if a:
            ev.monitor.set_level(incumbent, a)
            ev.monitor.widen = 1.0      # a whole block within the band: the machine has settled
        if v.better and b:
            ev.monitor.set_level(cand, b)
        _record(ev, incumbent, cand, v, label, a, b, first)
        return v
    v = Verdict(False, False, None, None, disturbed=True)
    _record(ev, incumbent, cand, v, label)
    return v


def _record(ev: Evaluator, inc: dict, cand: dict, v: Verdict, label: str, a=(), b=(), first=None) -> None:
    block = (first, len(ev.history)) if first is not None and a else None
    ev.duels.append(Duel(dict(inc), dict(cand), v, len(a), label, list(a), list(b), block))


def _confirm_block(ev: Evaluator, stock: dict | None, cands: list[dict], pairs: int, a: list, bs: list,
                   watch: bool) -> None:
    """Rounds of the stock then each candidate, `pairs` of them, and the stock once more to close;
    from where a, bs left off (a block the machine interrupted goes on)."""
    for i in range(pairs + 1):
        if stock is not None and len(a) <= i:
            g = _watch(ev, stock) if watch else ev.sample(stock)
            if g is None:
                stock = None        # the stock went bad: the candidates go on alone
            else:
                a.append(g)
        if i == pairs and stock is not None:
            return
        for c, b in zip(cands, bs):
            if not ev.known_bad(c) and len(b) <= i and (i < pairs or stock is None):
                g = ev.sample(c)
                if g is not None:
                    b.append(g)


def confirm(ev: Evaluator, stock: dict | None, cands: list[dict], pairs: int, label: str,
            fits: Callable[[int, float], bool] | None = None
            ) -> tuple[list[Verdict], list[float], list[list[float]], str]:
    """The confirmation at full N: every candidate against the stock in one block of a fixed number
    of pairs (stock, candidates, stock, ...: see the module's note). When the machine changes
    during it, the block runs again from scratch if a whole block still fits in the budget, else
    it goes on, and its figure carries the change; either way the session says so. `fits(runs,
    seconds)`: whether the budget still holds a new block (default: the evaluator's budget; a session
    frees the confirmation from it, so that its block always runs whole, and says what fits apart).
    (verdicts, the stock's runs, each candidate's runs, a note on what went wrong or "")."""
    note = ""
    a: list[float] = []
    bs: list[list[float]] = [[] for _ in cands]
    watch = True
    first = len(ev.history) + 1
    while True:
        try:
            _confirm_block(ev, stock, cands, pairs, a, bs, watch)
        except Disturbed:
            change = ev.monitor.changes[-1]
            change.retried.extend(dict(c) for c in cands)
            watch = False
            runs = (pairs + 1) + pairs * len(cands)
            seconds = runs * ev.history[-1].m.seconds
            if (fits(runs, seconds) if fits else ev.budget.trials_left >= runs and ev.budget.seconds_left >= seconds):
                a, bs = [], [[] for _ in cands]
                first = len(ev.history) + 1
                change.settled = "the confirmation ran again from its start, taken as it came"
                note = f"the machine changed during the confirmation (trial {change.trial}): its block ran again"
            else:
                change.settled = "the confirmation went on: no budget for a new block"
                note = (f"the machine changed during the confirmation (trial {change.trial}, "
                        f"{100 * change.change:+.0f}%): its figure and interval carry that change")
            ev.say(f"  ... {change.settled}")
            continue
        except BudgetExhausted:
            note = "the budget ran out during the confirmation: its runs so far are what there is"
        break
    verdicts = []
    for c, b in zip(cands, bs):
        v = _verdict(a, b, unfinished=min(len(a), len(b)) < pairs)
        if v.unfinished:
            v.better = v.worse = False
        v.invalid = ev.known_bad(c)
        if stock is not None:
            ev.duels.append(Duel(dict(stock), dict(c), v, len(a), label, list(a), list(b),
                                 (first, len(ev.history)) if a else None))
        verdicts.append(v)
    if a and stock is not None:
        ev.monitor.set_level(stock, a)
    return verdicts, a, bs, note
