"""Pass, fail or undecided, for every node and metric with a reference or a fleet.

Every figure is judged on the logarithm (a change of a rate is a ratio).

Against the fleet, a node is set against the median of its class's other nodes survey by survey
(the node left out, so that a slow node does not drag its own yardstick): the nodes of one survey
measured at the same time, so what slowed them all (other work on the machine, a warmer room)
cancels, as in a paired test. Its level is the mean of those log ratios over the surveys judged;
their noise, in turn:
- several surveys: the ratios' own spread (at least MIN_SD), with its own degrees of freedom. Not
  drawn towards a spread the class shares (as `rmax compare` does): on a shared machine a node's
  figure jumps now and then by a factor, and a node that jumped twice then looked sure of a slowdown;
- one survey: the spread of the class's nodes' ratios (1.4826 x MAD), which holds each node's
  run-to-run noise and the nodes' true differences, so the interval errs wide; but one figure never
  fails a node (MIN_FAIL): beyond the band it is undecided until another survey;
A class of fewer than 3 nodes has no fleet verdict: with 2, neither is "the odd one".

Against a reference, the node's level is the mean of its figure's logarithms; its noise the spread
over its surveys, or with one survey its class's spread across nodes; a node
alone in its class with one survey has none, and is undecided.

The interval (Student's t at the confidence asked) is then set against the band: a reference's value
x (1 + lower) .. value x (1 + upper), or the fleet's tolerance in the metric's worse direction (a
rate lower, a time higher): inside, pass; wholly outside, fail; across an edge, undecided, with the
measurement that would decide. Every pass states the smallest difference it could have detected:
where the node's level would have had to be for the same interval to lie wholly beyond the band."""

from __future__ import annotations

import dataclasses
import math
import statistics
from dataclasses import asdict, dataclass

from rmax.accept.links import judged_against_rate
from rmax.accept.measured import Series
from rmax.accept.references import Fleet, References
from rmax.stats import robust_sd, t_quantile
from rmax.survey.spread import MIN_SPREAD

MANY_SURVEYS = 30       # beyond this many, more surveys are no answer
# A figure's run-to-run noise is taken as at least this (sd of its logarithm, a survey): three surveys
# that agree closely by chance would otherwise make a verdict sure of itself (spread.py's floor too)
MIN_SD = MIN_SPREAD
# A fail needs this many figures of the node: one figure beyond the band may be a slow node or a moment
# on a busy machine (a 6-node virtual cluster's one survey failed a node for one STREAM dip), and only
# the node's own noise tells them apart; one figure can still pass a node, with room to spare.
MIN_FAIL = 2
MIN_FLEET = 3           # nodes in a class for a fleet verdict (the node and 2 others at least)
STATES = ("pass", "fail", "undecided")
CLUSTER = "(cluster)"    # the node of a verdict on the whole cluster (HPL): no host is named so


@dataclass
class Verdict:
    node: str
    metric: str
    unit: str
    against: str              # "reference" or "fleet"
    state: str                # pass | fail | undecided
    value: float              # the node's figure: its geometric mean over the surveys
    target: float             # the reference's value or the class's median
    band: list                # [low, high] in the metric's unit (None: unbounded)
    diff: float               # value / target - 1
    interval: list | None     # [lo, hi] of diff at the confidence asked
    detectable: float | None  # smallest difference from target it could have detected (signed)
    n: int                    # the node's figures (surveys)
    noise: str                # where the noise came from
    reference: str | None     # the reference named, or the class
    why: str = ""             # the verdict in words; undecided: what would decide

    def as_dict(self) -> dict:
        return asdict(self)


def _pct(x: float | None) -> str:
    return "—" if x is None or not math.isfinite(x) else f"{100 * x:+.1f}%"


@dataclass
class _Level:
    mean: float          # of the logarithms
    se: float            # its standard error (nan: no noise basis)
    df: float
    noise: str
    n: int = 1           # the node's figures (surveys)
    own: bool = False    # the noise is the node's own (several surveys), not its class's spread


def _logs(s: Series) -> dict[str, float]:
    """survey -> log of the figure (positive figures only)."""
    return {sv: math.log(v) for sv, v in s.by_survey().items() if v > 0}


def _var(x: list[float]) -> float:
    return statistics.variance(x) if len(x) > 1 else math.nan


def level_of(x: list[float], spread: list[float], what: str) -> _Level:
    """The mean of x; its noise from x's own spread (at least MIN_SD a survey), else from `spread`
    (one value a node across the class: at least MIN_FLEET of them), else none."""
    if not x:
        return _Level(math.nan, math.nan, 0, "no positive figure", 0)
    mean = sum(x) / len(x)
    if len(x) > 1:
        sd = max(math.sqrt(_var(x)), MIN_SD)
        return _Level(mean, sd / math.sqrt(len(x)), len(x) - 1, f"{len(x)} surveys", len(x), True)
    if len(spread) >= MIN_FLEET:
        return _Level(mean, max(robust_sd(spread), MIN_SD), len(spread) - 1,
                      f"1 survey; the spread of {what} over its class's {len(spread)} nodes", 1)
    return _Level(mean, math.nan, 0, "1 survey, and no spread to measure its noise", 1)


class ClassNoise:
    """One metric in one class: each node's logs and its log ratios to the median of the class's
    other nodes in the same survey, and the noise the nodes share."""

    def __init__(self, series: list[Series]):
        self.logs = {s.node: _logs(s) for s in series}
        self.ratios: dict[str, list[float]] = {}
        self.centers: dict[str, list[float]] = {}
        for node, mine in self.logs.items():
            for sv, x in mine.items():
                others = [o[sv] for n, o in self.logs.items() if n != node and sv in o]
                if len(others) + 1 >= MIN_FLEET:
                    c = statistics.median(others)
                    self.ratios.setdefault(node, []).append(x - c)
                    self.centers.setdefault(node, []).append(c)

    def absolute(self, node: str) -> _Level:
        x = list(self.logs.get(node, {}).values())
        one = [next(iter(v.values())) for v in self.logs.values() if len(v) == 1]
        return level_of(x, one if len(x) == 1 else [], "the figure")

    def relative(self, node: str) -> _Level | None:
        """The node's level against the others' medians; None: too few nodes for a fleet."""
        x = self.ratios.get(node)
        if not x:
            return None
        one = [v[0] for v in self.ratios.values() if len(v) == 1]
        return level_of(x, one if len(x) == 1 else [], "the ratio to the others' median")


def _interval(d: float, se: float, df: float, confidence: float) -> tuple[float, float, float]:
    """(lo, hi, half-width) of a log difference: each end Student's t one-sided at `confidence` (a
    two-sided interval of 2 x confidence - 1, 90 % at 95 %: the two one-sided tests of equivalence
    testing, Schuirmann 1987), since each edge of a band is a one-sided question."""
    t = t_quantile(confidence, max(df, 1))
    return d - t * se, d + t * se, t * se


def _judge(d: float, se: float, df: float, low: float, high: float, confidence: float,
           lower_is_better: bool, n: int) -> tuple[str, list | None, float | None]:
    """(state, interval as ratios - 1, detectable) for a log difference d against the log band; a fail
    needs MIN_FAIL figures of the node (n)."""
    if not math.isfinite(se):
        return "undecided", None, None
    lo, hi, half = _interval(d, se, df, confidence)
    if low <= lo and hi <= high:
        state = "pass"
    elif hi < low or lo > high:
        state = "fail" if n >= MIN_FAIL else "undecided"
    else:
        state = "undecided"
    # where its level would have had to be for this interval to lie wholly beyond the worse edge
    edge = high + half if lower_is_better else low - half
    detectable = math.expm1(edge) if math.isfinite(edge) else None
    return state, [math.expm1(lo), math.expm1(hi)], detectable


def _surveys_to_decide(d: float, lv: _Level, low: float, high: float, confidence: float) -> str:
    """What would decide an undecided verdict: about how many surveys in all would narrow the node's
    interval enough to clear the nearer edge of the band, if its level stays where it is."""
    if not lv.own:
        beyond = d < low or d > high
        return ("another survey of this node (rmax accept --repeat 2 or more): one figure beyond the band may be a "
                "moment's interruption, and only its own noise tells" if beyond else
                "another survey of this node (rmax accept --repeat 2 or more), to measure its own noise")
    gap = min(abs(d - low), abs(d - high))
    if gap == 0:
        return "nothing: its level is on the band's edge"
    t = t_quantile(confidence, max(lv.df, 1))
    need = math.ceil(lv.se ** 2 * lv.n * (t / gap) ** 2)     # one survey's variance over what the interval may hold
    if need > MANY_SURVEYS:
        return (f"more than {MANY_SURVEYS} surveys: its level is {100 * abs(math.expm1(gap)):.1f}% from the band's "
                f"edge, within its noise; a wider tolerance, if that is what matters")
    return f"about {need} surveys of this node in all (now {lv.n}; rmax accept --repeat {need})" if need > lv.n + 1 \
        else "one more survey of this node"


def judge_level(node: str, metric: str, unit: str, against: str, lv: _Level, low: float, high: float,
                confidence: float, value: float, target: float, reference: str | None, words: str,
                lower_is_better: bool = False) -> Verdict:
    """A verdict on a level (lv: the mean log ratio of the figure to `target`) against the band
    low..high of log ratios; `words` names what it is set against."""
    state, interval, det = _judge(lv.mean, lv.se, lv.df, low, high, confidence, lower_is_better, lv.n)
    band = [target * math.exp(b) if math.isfinite(b) else None for b in (low, high)]
    v = Verdict(node, metric, unit, against, state, value, target, band, math.expm1(lv.mean), interval, det,
                lv.n, lv.noise, reference)
    v.why = _words(v, words, lambda: _surveys_to_decide(lv.mean, lv, low, high, confidence))
    return v


def judge_reference(s: Series, ref, lv: _Level, confidence: float, against: str = "reference") -> Verdict:
    """The node's level (ClassNoise.absolute) against the reference's band (a link's rate is one)."""
    low, high = ref.band()
    target = math.log(ref.value)
    rel = dataclasses.replace(lv, mean=lv.mean - target)
    return judge_level(s.node, s.metric, s.unit, against, rel, math.log(low) - target if low > 0 else -math.inf,
                       math.log(high) - target if math.isfinite(high) else math.inf, confidence, math.exp(lv.mean),
                       ref.value, ref.describe(), ref.describe(), s.lower_is_better)


def judge_fleet(s: Series, noise: ClassNoise, fleet: Fleet, node_class: str) -> Verdict | None:
    lv = noise.relative(s.node)
    if lv is None or not math.isfinite(lv.mean):
        return None
    worse, better = math.log1p(fleet.lower), math.log1p(fleet.upper) if fleet.upper is not None else math.inf
    low, high = (-better, -worse) if s.lower_is_better else (worse, better)
    target = math.exp(statistics.mean(noise.centers[s.node]))
    return judge_level(s.node, s.metric, s.unit, "fleet", lv, low, high, fleet.confidence, target * math.exp(lv.mean),
                       target, f"class {node_class}", f"the median of its class's {len(noise.logs) - 1} other nodes",
                       s.lower_is_better)


def _words(v: Verdict, against: str, decide) -> str:
    iv = f" [{_pct(v.interval[0])}, {_pct(v.interval[1])}]" if v.interval else ""
    fig = f"{v.value:.4g} {v.unit}, {_pct(v.diff)}{iv} against {against} ({v.target:.4g} {v.unit})"
    if v.state == "fail":
        return f"fail: {fig}: outside the band ({_band(v)})"
    if v.state == "pass":
        return f"pass: {fig}, within the band ({_band(v)}); could have detected {_pct(v.detectable)}"
    return f"undecided: {fig}, across the band's edge ({_band(v)}); would decide: {decide()}" if v.interval else \
        f"undecided: {fig}; no noise to judge it by; would decide: {decide()}"


def _band(v: Verdict) -> str:
    lo, hi = v.band
    return f"{lo:.4g} to {hi:.4g} {v.unit}" if lo is not None and hi is not None else (
        f"at least {lo:.4g} {v.unit}" if lo is not None else f"at most {hi:.4g} {v.unit}")


def decide(series: dict[tuple[str, str], Series], classes: dict[str, str], refs: References,
           rates: dict | None = None) -> list[Verdict]:
    """Every verdict: for each node and metric, against its reference (if any; a link within its switch
    without one: against its rate, `rates` node -> links.LinkRate) and against its class."""
    rates = rates or {}
    by_class_metric: dict[tuple[str, str], list[Series]] = {}
    for (node, metric), s in series.items():
        by_class_metric.setdefault((classes.get(node, ""), metric), []).append(s)
    out: list[Verdict] = []
    for (cls, metric), group in sorted(by_class_metric.items()):
        noise = ClassNoise(group)
        for s in sorted(group, key=lambda s: s.node):
            ref = refs.find(s.metric, s.base, cls)
            if ref is not None:
                out.append(judge_reference(s, ref, noise.absolute(s.node), refs.fleet.confidence))
            elif judged_against_rate(s) and s.node in rates:
                out.append(judge_reference(s, rates[s.node].reference(s.metric, refs.links.lower),
                                           noise.absolute(s.node), refs.fleet.confidence, "link rate"))
            f = judge_fleet(s, noise, refs.fleet, cls)
            if f is not None:
                out.append(f)
    return out


def node_states(verdicts: list[Verdict], nodes: list[str]) -> dict[str, dict]:
    """Each node: fail when any metric failed, else undecided when any is, else pass (none judged:
    undecided); with the counts and the failed metrics."""
    out = {}
    for n in nodes:
        mine = [v for v in verdicts if v.node == n]
        counts = {st: sum(v.state == st for v in mine) for st in STATES}
        state = "fail" if counts["fail"] else "undecided" if counts["undecided"] or not mine else "pass"
        out[n] = {"state": state, **counts, "failed": sorted({v.metric for v in mine if v.state == "fail"})}
    return out
