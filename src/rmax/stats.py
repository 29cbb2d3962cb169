"""Summary statistics of raw samples, matching native/common/rmx_stats.c.

Every number rmax shows is one of these statistics of kept samples; the
field names say which: the median by default (one disturbed repeat cannot move it),
best-of where a benchmark's own rules demand it (STREAM reports its best time)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass


def t_quantile(p: float, dof: float) -> float:
    """Student's t quantile. From scipy.special, whose import costs a fraction of scipy.stats'
    (seconds on a loaded node): summaries are made by every command that measures."""
    from scipy.special import stdtrit

    return float(stdtrit(dof, p))


def t_two_sided(t: float, dof: float) -> float:
    """The two-sided p-value of Student's t statistic (scipy.special, as t_quantile)."""
    from scipy.special import stdtr

    return float(2 * stdtr(dof, -abs(t)))


def t_beyond(d: float, se: float, dof: float, threshold: float) -> float:
    """The p-value of a difference d (standard error se, Student's t with dof) against the null that
    the true difference is at most `threshold` either way (McCarthy and Smyth's TREAT, Bioinformatics
    2009): a change is called larger than a minimum only when the data say so, not when its estimate
    happens to pass the minimum. threshold 0: the two-sided p-value."""
    from scipy.special import stdtr

    if se == 0:
        return 0.0 if abs(d) > threshold else 1.0
    return float(min(1.0, stdtr(dof, -(abs(d) - threshold) / se) + stdtr(dof, -(abs(d) + threshold) / se)))


def variance_prior(variances: list[float], dofs: list[float]) -> tuple[float, float]:
    """(s0^2, d0): the variance that many figures' sample variances (each with its degrees of
    freedom) spread around, and how many degrees of freedom that shared prior is worth, by the
    moments of their logarithms (Smyth 2004, "Linear models and empirical Bayes methods for
    assessing differential expression in microarray experiments", section 6.2). Where the variances
    spread no more than sampling alone would, they share one variance, worth as many degrees of
    freedom as its estimate from their mean is; where they spread widely, d0 is small and each
    figure keeps mostly its own. Needs two or more positive variances; (nan, 0) otherwise."""
    from scipy.special import digamma, polygamma

    got = [(v, d) for v, d in zip(variances, dofs) if v > 0 and d > 0]
    if len(got) < 2:
        return math.nan, 0.0
    e = [math.log(v) - float(digamma(d / 2)) + math.log(d / 2) for v, d in got]
    mean = sum(e) / len(e)
    sampling = sum(float(polygamma(1, d / 2)) for _, d in got) / len(got)
    # The prior's level is itself estimated, from the mean of len(e) log variances: it is worth no more
    # degrees of freedom than a variance known that well (a few dozen figures of one degree each: about 17).
    known = 2 * _inverse_trigamma(sampling / len(e))
    # the spread of the log variances beyond what each one's own sampling gives
    excess = sum((x - mean) ** 2 for x in e) / (len(e) - 1) - sampling
    d0 = known if excess <= 0 else min(known, 2 * _inverse_trigamma(excess))
    return math.exp(mean + float(digamma(d0 / 2)) - math.log(d0 / 2)), d0


def _inverse_trigamma(y: float) -> float:
    """x with trigamma(x) = y, by Newton's method on 1/trigamma (Smyth 2004, appendix)."""
    from scipy.special import polygamma

    if y > 1e7:
        return 1 / math.sqrt(y)
    if y < 1e-6:
        return 1 / y
    x = 0.5 + 1 / y
    for _ in range(50):
        tri = float(polygamma(1, x))
        step = tri * (1 - tri / y) / float(polygamma(2, x))
        x += step
        if -step / x < 1e-8:
            break
    return x


def moderated(variance: float, dof: float, prior: tuple[float, float]) -> tuple[float, float]:
    """(variance, degrees of freedom) of one figure after the prior shared by its peers
    (variance_prior): the weighted mean of the two, worth both their degrees of freedom."""
    s0, d0 = prior
    if not d0 or math.isnan(s0):
        return variance, dof
    return (d0 * s0 + dof * variance) / (d0 + dof), d0 + dof


@dataclass(frozen=True)
class Summary:
    n: int
    min: float
    median: float
    mean: float
    sd: float
    max: float
    ci95: tuple[float, float]

    def as_dict(self) -> dict:
        d = asdict(self)
        d["ci95"] = list(self.ci95)
        return d


def summarize(samples) -> Summary:
    x = sorted(float(v) for v in samples)
    n = len(x)
    if n == 0:
        nan = math.nan
        return Summary(0, nan, nan, nan, nan, nan, (nan, nan))
    median = x[n // 2] if n % 2 else (x[n // 2 - 1] + x[n // 2]) / 2
    mean = sum(x) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in x) / (n - 1)) if n > 1 else 0.0
    if n > 1:
        half = t_quantile(0.975, n - 1) * sd / math.sqrt(n)
        ci = (mean - half, mean + half)
    else:
        ci = (mean, mean)
    return Summary(n, x[0], median, mean, sd, x[-1], ci)


def differ_significantly(a, b, alpha: float = 0.05) -> tuple[bool, float]:
    """Welch's t-test between two sample sets: (significant, p-value).

    With fewer than two samples on either side nothing can be said: (False, nan)."""
    a, b = list(a), list(b)
    if len(a) < 2 or len(b) < 2:
        return False, math.nan
    if len(set(a)) == 1 and len(set(b)) == 1:
        return a[0] != b[0], 0.0 if a[0] != b[0] else 1.0
    # scipy.stats.ttest_ind(a, b, equal_var=False), written out: its call costs about 2 ms, and a
    # survey's staircases make one for every pair of neighbouring points of every node
    (ma, ea), (mb, eb) = _mean_and_sq_error(a), _mean_and_sq_error(b)
    dof = (ea + eb) ** 2 / (ea ** 2 / (len(a) - 1) + eb ** 2 / (len(b) - 1))
    p = t_two_sided((ma - mb) / math.sqrt(ea + eb), dof)
    return p < alpha, p


def _mean_and_sq_error(x: list) -> tuple[float, float]:
    """The mean of x and its squared standard error (the sample variance, n - 1, over n)."""
    n = len(x)
    mean = sum(x) / n
    return mean, sum((v - mean) ** 2 for v in x) / (n - 1) / n


def differ_paired(a, b, alpha: float = 0.05) -> tuple[bool, float]:
    """A paired t-test on the log ratios a[i] / b[i] of positive rates measured side by side (in
    turn, pair by pair): the load a pair shares cancels, and a ratio is what a rate's change is.
    (significant, p-value); fewer than two pairs, or unequal lengths: (False, nan)."""
    a, b = list(a), list(b)
    if len(a) != len(b) or len(a) < 2 or min(a + b) <= 0:
        return False, math.nan
    logs = [math.log(x / y) for x, y in zip(a, b)]
    if max(logs) - min(logs) < 1e-12 * max(1.0, max(map(abs, logs))):
        return logs[0] != 0, 0.0 if logs[0] != 0 else 1.0
    # scipy.stats.ttest_1samp(logs, 0), written out: importing scipy.stats costs a CPU-second in
    # every tuning session (its confirmation is the only user)
    m, se2 = _mean_and_sq_error(logs)
    p = t_two_sided(m / math.sqrt(se2), len(logs) - 1)
    return p < alpha, p


def holm(p_values: list[float]) -> list[float]:
    """Holm's step-down adjustment of p-values tested together (Holm, Scand. J. Statistics 1979):
    comparing the adjusted values with alpha keeps the chance of any false "significant" among
    them at most alpha, however many metrics a comparison pairs. NaN (not tested) stays NaN."""
    idx = sorted((i for i, p in enumerate(p_values) if not math.isnan(p)), key=lambda i: p_values[i])
    m, out, running = len(idx), list(p_values), 0.0
    for rank, i in enumerate(idx):
        running = max(running, min(1.0, (m - rank) * p_values[i]))
        out[i] = running
    return out


def shifted(a, b, worse: str, alpha: float = 0.01) -> tuple[bool, float]:
    """One-sided Mann-Whitney U test: are a's values stochastically `worse` ('lower' or 'higher')
    than b's? (significant, p-value). A rank test, so one preempted sample in b cannot hide a
    shift, nor one lucky sample in a fake one. Either side empty: (False, nan)."""
    a, b = list(a), list(b)
    if not a or not b:
        return False, math.nan
    if worse not in ("lower", "higher"):
        raise ValueError(f"worse must be 'lower' or 'higher', not {worse}")
    if any(math.isnan(v) for v in a + b):
        return False, math.nan
    p = _mann_whitney_sf(a, b) if worse == "higher" else _mann_whitney_sf(b, a)
    return p < alpha, p


def _mann_whitney_sf(a: list, b: list) -> float:
    """P(U >= U_a) under the null, U_a counting the pairs where a's value is above b's (ties one
    half): scipy.stats.mannwhitneyu(a, b, alternative="greater"), written out, as its method "auto"
    chooses: exact when either side has at most 8 values and no two values tie, else the normal
    approximation with its tie and continuity corrections. Every agent check, status and fleet
    calls it, and importing scipy.stats costs more than a CPU-second."""
    n1, n2 = len(a), len(b)
    ranked = sorted(a + b)
    rank, ties, i = {}, [], 0
    while i < len(ranked):          # average ranks, 1-based, and the size of each group of ties
        j = i
        while j < len(ranked) and ranked[j] == ranked[i]:
            j += 1
        rank[ranked[i]] = (i + 1 + j) / 2
        ties.append(j - i)
        i = j
    u = sum(rank[v] for v in a) - n1 * (n1 + 1) / 2
    n = n1 + n2
    if min(n1, n2) <= 8 and max(ties) == 1:
        counts = _u_counts(n1, n2)
        return min(1.0, sum(counts[int(u):]) / math.comb(n, n1))
    sd = math.sqrt(n1 * n2 / 12 * ((n + 1) - sum(t ** 3 - t for t in ties) / (n * (n - 1))))
    if sd == 0:                     # every value the same
        return 1.0
    z = (u - n1 * n2 / 2 - 0.5) / sd
    return min(1.0, 0.5 * math.erfc(z / math.sqrt(2)))


def _u_counts(n1: int, n2: int) -> list[int]:
    """How many of the C(n1 + n2, n1) orderings give U = 0, 1, ..., n1 n2: the coefficients of the
    Gaussian binomial [n1 + n2, k]_q, k the smaller size, as the product over i <= k of
    (1 - q^(n - k + i)) / (1 - q^i), exact in integers, O(k n1 n2)."""
    n, k = n1 + n2, min(n1, n2)
    c = [1] + [0] * (n1 * n2)
    for i in range(1, k + 1):
        step = n - k + i            # times (1 - q^step), from the top down
        for d in range(len(c) - 1, step - 1, -1):
            c[d] -= c[d - step]
        for d in range(i, len(c)):  # divided by (1 - q^i): a running sum with stride i
            c[d] += c[d - i]
    return c


MAD_TO_SD = 1.4826     # the median absolute deviation of a normal sample times this estimates its sd


def robust_sd(x) -> float:
    """1.4826 x the median absolute deviation: the SD of normal samples, not inflated by the few a
    shared node disturbs (one preempted chase can make a 30 ns point's SD 50 ns). Empty or with a
    NaN: NaN."""
    from statistics import median   # not numpy: 50x less per call on a point's few samples, and a
                                    # survey's staircases take one for every point of every node
    x = [float(v) for v in x]
    if not x or any(math.isnan(v) for v in x):
        return math.nan
    m = median(x)
    return MAD_TO_SD * median([abs(v - m) for v in x])


STABLE_SPREAD = 0.10   # repeats whose range exceeds 10% of their median do not agree on one figure
MIN_CHANGE = 0.05      # the smallest relative change a before/after verdict calls significant (rmax compare
                       # --min-change): with enough repeats Welch's test separates a percent or two
STATE_GAP = 1.5        # repeats split by a gap this wide (ratio) are two states, not scatter


def two_states(values, gap: float = STATE_GAP, least: int = 2):
    """Whether repeats fall into two separate groups rather than scattering around one value
    (the machine changed state during the run, e.g. a VM's vCPUs moved between host cores that
    share a cache and cores that do not): sorted, split at the widest ratio between neighbours;
    two states when that ratio is at least `gap`, each side holds at least `least` repeats and
    is itself narrower (max / min) than the gap. ((median, count) of the lower group, the same
    of the upper) or None. A median over two states describes neither."""
    from statistics import median   # not numpy: `runs list` reads this for every net run it shows

    x = sorted(float(v) for v in values if v is not None and math.isfinite(v) and v > 0)
    if len(x) < 2 * least:
        return None
    ratio, cut = max((x[i] / x[i - 1], i) for i in range(least, len(x) - least + 1))
    lo, hi = x[:cut], x[cut:]
    if ratio < gap or lo[-1] / lo[0] >= ratio or hi[-1] / hi[0] >= ratio:
        return None
    return (float(median(lo)), len(lo)), (float(median(hi)), len(hi))


def spread(values) -> dict:
    """How far repeats of one measurement agree: their median, range, interquartile range
    and 95% CI of the mean, and `spread` = range / median. `stable` says whether the
    repeats agree within STABLE_SPREAD; None with fewer than two repeats (nothing to say)."""
    import numpy as np
    x = sorted(float(v) for v in values if v is not None and math.isfinite(v))
    s = summarize(x)
    if s.n == 0:
        return {"n": 0, "median": None, "spread": None, "stable": None}
    q1, q3 = (float(q) for q in np.percentile(np.asarray(x), (25, 75)))
    rel = (s.max - s.min) / abs(s.median) if s.median else math.inf
    return {"n": s.n, "median": s.median, "min": s.min, "max": s.max, "iqr": [q1, q3], "ci95": list(s.ci95),
            "spread": rel, "stable": rel <= STABLE_SPREAD if s.n > 1 else None}


def median_interval(values, level: float = 0.95) -> tuple[float, float]:
    """A distribution-free interval of the median: the order statistics k and n-1-k (0-based) whose
    sign-test coverage is at least `level`; (nan, nan) when there are too few values for it (5 or
    fewer at 95 %). For noisy paired comparisons of tools, where no shape of the noise can be assumed."""
    x = sorted(float(v) for v in values)
    n = len(x)

    def cover(k: int) -> float:
        return 1 - 2 * sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n

    k = -1
    while k + 1 < n - 2 - k and cover(k + 1) >= level:
        k += 1
    return (x[k], x[n - 1 - k]) if k >= 0 else (math.nan, math.nan)


def band_verdict(lo: float, hi: float, low: float, high: float) -> str:
    """Whether an interval [lo, hi] shows a figure inside the band [low, high] ("within"), outside
    it ("outside"), or neither ("undecided": more data decides; "too few" without an interval)."""
    if math.isnan(lo):
        return "too few"
    if low <= lo and hi <= high:
        return "within"
    if hi < low or lo > high:
        return "outside"
    return "undecided"
