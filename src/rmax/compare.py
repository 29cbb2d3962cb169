"""Before and after: two runs (or two surveys) metric by metric, with whether each change is
significant, undecided, or not.

Runs are paired by kind and host (and, for HPL tests, by their parameters). A benchmark family's
metrics are its figures (Family.metrics), paired by key, and only when measured at the same point
(Figure.at: a working set, a sweep's range): the rest is listed as not compared, with why; two
sides with nothing to pair are refused.

A change is significant when it is beyond the figure's run-to-run noise, which comes from, in turn:
- several runs on each side: their spread within each side, pooled (a t-test on the logarithms);
- else the store's history: the other stored runs of the same configuration (kind, options,
  hosts and machine fingerprint, `Config`), started before the latest compared run (one started
  in the same stored millisecond is left out: it may be later). They join side A's runs (the before) as one group, and a side of several runs is a group of its own:
  the noise is the pooled spread within the groups (of the logarithm: a change is a ratio), and
  the test Student's t on B against A with the groups' degrees of freedom. One earlier run gives
  one degree of freedom, too few alone; the figures of one kind share much of their noise, and an
  empirical-Bayes prior from them adds what they agree on (_moderate), for several runs a side too;
- else the figure's own repeats inside each run: a lower bound on the run-to-run noise, so they
  can say "no" (the change is within them) but never "yes";
- else nothing: the change is undecided, and said to be.
Blocks timed inside one run are never repeats. Each change is tested against `min_change` (the null:
a true change of at most that much either way, McCarthy and Smyth's TREAT), and Holm's adjustment
runs over every change tested, so that pairing many metrics does not make some "significant" by
chance; a change whose estimate is under the minimum reads "no (under the minimum change)" once it
has a noise basis, and still counts among those tested.

Each side's figure also says whether it was measured on a busy node (the run's stored load
readings, inventory/load.py: other processes' CPU use while it ran; an HPL test has its run's)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

from rmax.errors import RmaxError
from rmax.inventory.load import busy_line
from rmax.stats import MIN_CHANGE, differ_significantly, holm, moderated, t_beyond, t_quantile, variance_prior
from rmax.store import Store
from rmax.store.runs import RunRecord

ALPHA = 0.05
# How a change reads: significant, not, or undecidable without a measure of its noise.
VERDICT = {True: "yes", False: "no", None: "not enough runs to decide"}
TESTED = ("runs", "history")          # noise bases that can call a change significant
HISTORY_SCAN = 1000                   # the latest stored runs of a kind searched for history, at least...
HISTORY_DEPTH = 3                     # ...and this many per host compared (a survey of many nodes stores one per node)
HISTORY_MOST = 20                     # the latest runs of one configuration used as history


@dataclass
class Change:
    kind: str
    host: str
    metric: str
    unit: str
    a: float
    b: float
    n_a: int                   # samples a side's verdict rests on: its runs, or one run's own repeats
    n_b: int
    p_value: float | None      # this metric alone
    significant: bool | None   # on the Holm-adjusted p-value and the minimum change; None: undecided
    p_adjusted: float | None = None
    small: bool = False        # under the minimum change, so never significant
    basis: str | None = None   # the noise the verdict rests on: "runs", "history", "repeats" (a lower bound)
    n_history: int = 0         # earlier runs of the same configuration in that noise
    noise: float | None = None   # the relative run-to-run noise (sd of the logarithm) of a tested change
    prior_dof: float | None = None   # degrees of freedom the noise shared by the compared figures added 
    why: str | None = None     # an undecided change: what would decide it
    busy_a: str | None = None  # a side's figure measured on a busy node: how busy
    busy_b: str | None = None
    better: str = "higher"     # the figure's better direction (Figure.better): a regression goes the other way
    # the smallest change its test could have called significant, whatever the p-value of the others:
    # Holm's strictest threshold (alpha / the changes tested), as a relative change (a tested change only)
    detectable: float | None = None
    se: float | None = None      # a pooled test's standard error of B's mean against A's (of logarithms, if `logs`)
    dof: float | None = None     # and its degrees of freedom
    logs: bool = True

    @property
    def regression(self) -> bool:
        """Significant and in the worse direction."""
        return bool(self.significant) and (self.change < 0 if self.better == "higher" else self.change > 0)


    @property
    def change(self) -> float:
        return (self.b - self.a) / self.a if self.a else math.nan

    def noise_from(self) -> str:
        """Where the noise of its verdict came from, in a few words."""
        if self.basis == "runs":
            return f"runs {self.n_a}/{self.n_b}"
        if self.basis == "history":
            runs = f", runs {self.n_a}/{self.n_b}" if self.n_a + self.n_b > 2 else ""
            shared = f", its kind's noise +{self.prior_dof:.0f} df" if self.prior_dof else ""
            return f"{self.n_history} earlier run{'s' * (self.n_history != 1)}{runs}{shared}"
        if self.basis == "repeats":
            return f"own repeats {self.n_a}/{self.n_b}"
        return "—"

    def as_dict(self) -> dict:
        return {**self.__dict__, "change": self.change, "regression": self.regression}


def _host(r: RunRecord) -> str:
    return ",".join(r.hosts or [r.hostname or "this host"])   # a local run may record no hosts: where rmax ran


def _pair_key(r: RunRecord) -> tuple:
    if r.kind == "hpl-test":
        p = r.params
        return (r.kind, _host(r), p.get("code"), p.get("n"), p.get("nb"), p.get("p"), p.get("q"))
    return (r.kind, _host(r))


def _hpl_tests(store: Store, run: RunRecord) -> list[RunRecord]:
    return store.children(run.id) if run.kind == "hpl" else []


def _members(store: Store, run: RunRecord) -> list[RunRecord]:
    if run.kind == "survey":
        kids = store.children(run.id)
        return [k for k in kids if k.status == "ok"] + [t for k in kids for t in _hpl_tests(store, k) if t.status == "ok"]
    return [run] + _hpl_tests(store, run)


def paired(store: Store, a: list[RunRecord], b: list[RunRecord]) -> dict[tuple, tuple[list[RunRecord], list[RunRecord]]]:
    """The runs of each side (one or several runs or surveys) grouped by what pairs them
    (kind, host, HPL parameters). Several runs on a side are that side's repeats."""
    groups: dict[tuple, tuple[list, list]] = {}
    for side, runs in ((0, a), (1, b)):
        for run in runs:
            for r in _members(store, run):
                groups.setdefault(_pair_key(r), ([], []))[side].append(r)
    return groups


MOST_RUNS = 100


def side(store: Store, ids: str) -> list[RunRecord]:
    """The runs a side names: one id (or prefix, or 'latest'), or several separated by commas."""
    names = [i.strip() for i in ids.split(",") if i.strip()]
    if not names or len(names) > MOST_RUNS:
        raise RmaxError(f"'{ids[:40]}': name 1 to {MOST_RUNS} runs on a side, separated by commas")
    runs = [store.get(i) for i in names]
    twice = sorted({r.id[:8] for r in runs if sum(x.id == r.id for x in runs) > 1})
    if twice:  # one run counted twice would pass for independent repeats
        raise RmaxError(f"run {', '.join(twice)} is named more than once on a side",
                        hint="each run on a side is one repeat: name each once")
    kinds = {r.kind for r in runs}
    if len(kinds) > 1:
        raise RmaxError(f"one side mixes run kinds ({', '.join(sorted(kinds))})",
                        hint="give runs of one kind on each side, e.g. several surveys")
    return runs


def curves(groups: dict[tuple, tuple[list, list]]) -> list[tuple[str, list]]:
    """(title, plots) per paired family: the family's own plots, drawn with the latest run of
    each side as two series ("A host", "B host"), so the curves lie over each other."""
    from rmax.families import loaded

    out = []
    for key, (ra, rb) in groups.items():
        if not ra or not rb:
            continue
        la, lb = loaded(ra[-1]), loaded(rb[-1])
        if la is None or lb is None:
            continue
        fam, host = la[0], key[1]
        plots = fam.plots([(f"A {host}", la[1]), (f"B {host}", lb[1])])
        if plots:
            out.append((f"{fam.title} ({host})", plots))
    return out


def _where(key: tuple) -> str:
    return f"{key[0]} on {key[1]}" + (f" ({key[2]} N={key[3]} NB={key[4]} {key[5]}x{key[6]})" if len(key) > 2 else "")


class Runs:
    """What compare reads of stored runs, each read once: their figures by key, their configuration,
    whether they ran on a busy node, and the history of a configuration."""

    def __init__(self, store: Store, compared: set[str], until: str, hosts: dict[str, int]):
        """`hosts`: kind -> how many hosts its compared runs ran on (the depth of the history searched)."""
        self.store, self.compared, self.until, self.hosts = store, compared, until, hosts
        self._figures: dict[str, dict] = {}
        self._parents: dict[str, RunRecord | None] = {}
        self._kinds: dict[str, list[RunRecord]] = {}

    def figures(self, r: RunRecord) -> dict:
        """key -> Figure of a run: a family's metrics, or an HPL test's rate."""
        if r.id not in self._figures:
            from rmax.bench.family import StaleSummary
            from rmax.families import loaded

            if r.kind == "hpl-test":
                from rmax.families.hpl import HplTestSummary
                from rmax.bench.view import figure

                p = r.params
                try:
                    f = figure(HplTestSummary.load(r.summary), ("gflops",), "gflops",
                               f"{p.get('code')} N={p.get('n')} NB={p.get('nb')} {p.get('p')}x{p.get('q')}: GFLOPS",
                               "GFLOPS", "one HPL test")
                except StaleSummary:    # stored in another shape: skipped
                    f = None
                self._figures[r.id] = {f.key: f} if f else {}
            else:
                got = loaded(r)
                # an HPL run's Rmax is its best test's rate, which the test itself pairs (by N, NB and grid)
                self._figures[r.id] = {f.key: f for f in (got[0].metrics(got[1]) if got else [])
                                       if not (r.kind == "hpl" and f.role == "hpl_rmax")}
        return self._figures[r.id]

    def _parent(self, r: RunRecord) -> RunRecord | None:
        if r.parent not in self._parents:
            self._parents[r.parent] = self.store.get(r.parent) if r.parent else None
        return self._parents[r.parent]

    def config(self, r: RunRecord) -> tuple:
        """What makes two runs measurements of one thing: kind, options, hosts, machine fingerprint
        and MPI (an HPL test's are its run's)."""
        fp = r.fingerprint or (self._parent(r).fingerprint if r.kind == "hpl-test" and r.parent else None)
        return (r.kind, json.dumps(r.params, sort_keys=True), _host(r), fp, self.mpi(r))

    def mpi(self, r: RunRecord) -> str | None:
        """The MPI a run's ranks ran under ("MPICH 4.0.2"), as its environment records it (an HPL
        test's: its run's); None for a run of no MPI, or one stored before runs recorded it."""
        held = self._parent(r) if r.kind == "hpl-test" and r.parent else r
        m = (held.environment or {}).get("mpi") if held else None
        return " ".join(x for x in (m.get("implementation"), m.get("version")) if x) or None if m else None

    def busy(self, r: RunRecord) -> str | None:
        """How busy the node was while the run measured, when it was busy (an HPL test: its run's)."""
        held = self._parent(r) if r.kind == "hpl-test" and r.parent else r
        return busy_line(held.load, held.hostname) if held else None

    def history(self, r: RunRecord) -> list[RunRecord]:
        """The latest stored ok runs of r's configuration, none of the compared runs, started before
        the latest of them."""
        if r.kind not in self._kinds:
            scan = max(HISTORY_SCAN, HISTORY_DEPTH * self.hosts.get(r.kind, 1))
            self._kinds[r.kind] = [x for x in self.store.list(kind=r.kind, status="ok", limit=scan)
                                   if x.id not in self.compared and x.started_at < self.until]
        want = self.config(r)
        same = [x for x in self._kinds[r.kind] if x.params == r.params and _host(x) == _host(r)]
        return [x for x in same if self.config(x) == want][:HISTORY_MOST]    # fingerprints last: an HPL test reads its run's


def compare(store: Store, a_ids: str, b_ids: str,
            min_change: float = MIN_CHANGE) -> tuple[list[RunRecord], list[RunRecord], list[Change], list[str]]:
    """Side A against side B: each a run id or several, comma-separated. Returns the runs of
    each side, the changes, and notes: what could not be compared (with why), and whether
    the machine changed between the sides."""
    a, b = side(store, a_ids), side(store, b_ids)
    if a[0].kind != b[0].kind:
        raise RmaxError(f"A is a {a[0].kind} run and B a {b[0].kind} run: nothing measured on both sides",
                        hint="compare runs of one kind (or two surveys)")
    groups = paired(store, a, b)
    if not any(ra and rb for ra, rb in groups.values()):
        only = sorted({_where(k) for k in groups})
        raise RmaxError("A and B have no run of the same kind on the same host: " + "; ".join(only[:6]),
                        hint="runs pair by kind and host (and HPL tests by N, NB and grid)")
    members = [r for ra, rb in groups.values() for r in ra + rb]
    hosts: dict[str, int] = {}
    for key in groups:
        hosts[key[0]] = hosts.get(key[0], 0) + 1
    runs = Runs(store, {r.id for r in members} | {r.id for r in a + b}, max(r.started_at for r in members + a + b),
                hosts)
    changes: list[Change] = []
    tests: list[tuple[Change, Pooled]] = []
    # an HPL run is compared through its tests, which pair by N, NB and grid (and say when alone)
    skipped = [f"not compared: {_where(k)}: only in {'A' if ra else 'B'}" for k, (ra, rb) in groups.items()
               if not (ra and rb) and k[0] not in ("info", "hpl")]
    for key, (ra, rb) in groups.items():
        if ra and rb:
            _kind_changes(runs, key[0], key[1], ra, rb, changes, tests, skipped)
    _moderate(tests, min_change)
    _adjust(changes, min_change)
    changes.sort(key=lambda c: (c.kind, c.host, c.metric))
    fps = [{r.fingerprint for r in side_runs if r.fingerprint} for side_runs in (a, b)]
    machine = ([f"A and B ran on different machine fingerprints ({', '.join(sorted(fps[0]))} against "
                f"{', '.join(sorted(fps[1]))}): the hardware or software (CPU, memory, kernel, MPI, BLAS) changed "
                "between them, and a change may come from that"] if fps[0] and fps[1] and fps[0] != fps[1] else [])
    mpis = [sorted({m for pair in groups.values() for r in pair[i] if (m := runs.mpi(r))}) for i in (0, 1)]
    mpi = ([f"A ran under {' and '.join(mpis[0])} and B under {' and '.join(mpis[1])}: a different MPI, and a "
            "change may come from that"] if mpis[0] and mpis[1] and mpis[0] != mpis[1] else [])
    return a, b, changes, machine + mpi + sorted(skipped)


def _kind_changes(runs: Runs, kind: str, host: str, ra: list[RunRecord], rb: list[RunRecord], out: list[Change],
                  tests: list[tuple[Change, Pooled]], skipped: list[str]) -> None:
    """The changes of the paired runs of one kind on one host (none for runs of no family: an inventory,
    a tuning session); a figure measured at different points (Figure.at), or on one side only, goes to `skipped`."""
    sides = []
    for side_runs in (ra, rb):
        figs: dict[str, list] = {}
        for r in side_runs:
            for k, f in runs.figures(r).items():
                figs.setdefault(k, []).append((r, f))
        sides.append(figs)
    for name, mine, other in (("A", sides[0], sides[1]), ("B", sides[1], sides[0])):
        alone = sorted({mine[k][-1][1].metric for k in mine.keys() - other.keys()})
        if alone:
            skipped.append(f"not compared: {kind} on {host}: only in {name}: " + "; ".join(alone[:4])
                           + (f" and {len(alone) - 4} more" if len(alone) > 4 else ""))
    for key in sorted(sides[0].keys() & sides[1].keys()):
        fa, fb = sides[0][key], sides[1][key]
        at_a, at_b = {f.at for _, f in fa}, {f.at for _, f in fb}
        if len(at_a | at_b) > 1:
            name = fa[-1][1].metric.split(" (")[0]
            skipped.append(f"not compared: {kind} on {host}, {name}: measured at {' / '.join(sorted(map(str, at_a)))} in A and "
                           f"{' / '.join(sorted(map(str, at_b)))} in B, not the same quantity")
            continue
        last = fa[-1][1]
        c = Change(kind, host, last.metric, last.unit, _mid([f.value for _, f in fa]), _mid([f.value for _, f in fb]),
                   0, 0, None, None, better=last.better)
        c.busy_a, c.busy_b = (_busy([runs.busy(r) for r, _ in side_figs]) for side_figs in (fa, fb))
        pooled = _decide(c, runs, key, fa, fb)
        if pooled:
            tests.append((c, pooled))
        out.append(c)


def _busy(lines: list[str | None]) -> str | None:
    busy = [x for x in lines if x]
    if not busy:
        return None
    return busy[0] if len(lines) == 1 else f"{len(busy)} of {len(lines)} runs on a busy node, e.g. {busy[0]}"


def _decide(c: Change, runs: Runs, key: str, fa: list, fb: list) -> Pooled | None:
    """The noise basis and p-value of one change (its verdict waits for Holm's adjustment); a change
    tested on pooled groups returns their statistics instead, for its p-value once the prior that
    every such change shares is known (_moderate)."""
    va, vb = [f.value for _, f in fa], [f.value for _, f in fb]
    if len(va) > 1 and len(vb) > 1:
        # each side's spread, pooled and drawn towards its kind's prior like history's: a side of 4
        # surveys taken with a competitor halved STREAM at p(Holm) 0.07-0.17 by Welch's test alone
        c.basis, c.n_a, c.n_b = "runs", len(va), len(vb)
        return _pooled([va, vb], va, vb)
    at = fa[-1][1].at

    def past(r: RunRecord) -> list[float]:
        got = (runs.figures(h).get(key) for h in runs.history(r))
        return [f.value for f in got if f is not None and f.at == at]

    ha = past(fa[-1][0])
    same = runs.config(fa[-1][0]) == runs.config(fb[-1][0])
    hb = [] if same else past(fb[-1][0])
    groups = [va + ha, vb] + ([hb] if hb else [])
    df = sum(len(g) - 1 for g in groups if g)
    if df >= 1:
        c.basis = "history" if ha or hb else "runs"
        c.n_a, c.n_b, c.n_history = len(va), len(vb), len(ha) + len(hb)
        return _pooled(groups, va, vb)
    ra, rb = list(fa[-1][1].repeats), list(fb[-1][1].repeats)
    if len(va) == len(vb) == 1 and len(ra) > 1 and len(rb) > 1:
        c.basis, c.n_a, c.n_b = "repeats", len(ra), len(rb)
        c.p_value = _p(differ_significantly(ra, rb)[1])
        return None
    c.n_a, c.n_b = len(va) if len(va) > 1 else 0, len(vb) if len(vb) > 1 else 0
    c.why = ("one run a side and no other stored run of the same configuration (kind, options, hosts, "
             "machine) to measure the noise: run it again with the same options (its runs become history), "
             "or compare several runs a side")


@dataclass
class Pooled:
    """One change's groups, pooled: the difference of B's mean from A's (of logarithms where every
    value is positive: a change is a ratio), the variance within the groups and its degrees of
    freedom, sqrt(1/n_a + 1/n_b), and what makes the noise relative (A's mean, for raw values)."""
    d: float
    var: float
    df: int
    factor: float
    logs: bool
    scale: float


def _pooled(groups: list[list[float]], va: list[float], vb: list[float]) -> Pooled:
    logs = min(min(g) for g in groups if g) > 0
    f = math.log if logs else float
    gs = [[f(x) for x in g] for g in groups if g]
    df = sum(len(g) - 1 for g in gs)
    ss = sum(sum((x - sum(g) / len(g)) ** 2 for x in g) for g in gs)
    d = sum(map(f, vb)) / len(vb) - sum(map(f, va)) / len(va)
    return Pooled(d, ss / df, df, math.sqrt(1 / len(va) + 1 / len(vb)), logs, abs(sum(va) / len(va)))


PRIOR_PEERS = 4   # pooled figures of one kind that give it a prior of its own


def _moderate(tests: list[tuple[Change, Pooled]], min_change: float = MIN_CHANGE) -> None:
    """Each pooled change's p-value against the minimum change (stats.t_beyond: the null is a true
    change of at most min_change either way) and its noise. One earlier run gives a figure one degree of freedom,
    too few to decide even a halved rate against many tested changes; but figures of one kind share
    much of their noise. Their log variances give a prior (stats.variance_prior, Smyth's empirical
    Bayes): each figure's variance is drawn towards it, by as many degrees of freedom as the figures
    agree, and tested with Student's t on their sum. A kind with fewer than PRIOR_PEERS figures (an
    HPL run's one test) takes the prior of every figure compared. Priors are per kind because kinds
    differ: in a simulation of a survey's figures (1 earlier run, noise 2-5 % but oslat's 5-40 %), one
    prior for all let Holm's 5 % become 30 % (oslat's noisy figures drawn down to the others'), one
    per kind 7 %, while a halved HPL rate on 2 % noise was found 98 % of the time (14 % without a prior)."""
    logs = [(c, t) for c, t in tests if t.logs]

    def prior(group):
        return variance_prior([t.var for _, t in group], [t.df for _, t in group])

    every = prior(logs)
    kinds: dict[str, list] = {}
    for c, t in logs:
        kinds.setdefault(c.kind, []).append((c, t))
    priors = {k: prior(g) if len(g) >= PRIOR_PEERS else every for k, g in kinds.items()}
    for c, t in tests:
        var, df = moderated(t.var, t.df, priors[c.kind]) if t.logs else (t.var, t.df)
        sd = math.sqrt(var)
        c.noise = sd if t.logs else sd / t.scale if t.scale else math.nan
        c.prior_dof = df - t.df if df > t.df else None
        se = sd * t.factor
        c.p_value = t_beyond(t.d, se, df, _threshold(min_change, t.logs, t.scale))
        c.se, c.dof, c.logs = se, df, t.logs


def _threshold(min_change: float, logs: bool, scale: float) -> float:
    """The minimum change in the units a pooled test runs in: of the logarithm, else of A's value."""
    return math.log1p(min_change) if logs else min_change * scale


def _p(p: float) -> float | None:
    return None if math.isnan(p) else p


def _adjust(changes: list[Change], min_change: float = MIN_CHANGE, alpha: float = ALPHA) -> None:
    """The verdicts: Holm's adjustment over every change tested (a noise basis of runs or history),
    each against the minimum change; one whose estimate is under the minimum is "no", and counted
    among those tested (leaving it out because its estimate is small would test the others as if
    they had been chosen beforehand: two quiet sets of a 6-node survey had 3 "significant" changes
    of 6-7 % among 156); own repeats, a lower bound on the noise, say "no" for a change within them
    and leave a larger one undecided."""
    for c in changes:
        c.small = c.basis is not None and not abs(c.change) >= min_change
    tested = [c for c in changes if c.basis in TESTED and c.p_value is not None]
    for c, p in zip(tested, holm([c.p_value for c in tested])):
        c.p_adjusted, c.significant = p, p < alpha
    strictest = alpha / max(1, len(tested))
    for c in changes:
        c.detectable = _detectable(c, strictest, min_change)
    for c in changes:
        if c.small:
            c.significant = False
        elif c.basis == "repeats":
            within = c.p_value is None or c.p_value >= alpha
            c.significant = False if within else None
            if not within:
                c.why = ("beyond its own repeats' spread, which understates the run-to-run noise: run it again "
                         "with the same options (its runs become history), or compare several runs a side")


def _detectable(c: Change, alpha: float, min_change: float) -> float | None:
    """The smallest relative change (either way) a pooled test of c's noise would call significant at
    Holm's strictest threshold `alpha` (the first p-value must be under alpha / the changes tested):
    the minimum change and the test's half-width beyond it; None for a change with no pooled noise."""
    if c.se is None or not c.dof:
        return None
    half = t_quantile(1 - alpha / 2, c.dof) * c.se
    if c.logs:
        return math.expm1(math.log1p(min_change) + half)
    return min_change + half / abs(c.a) if c.a else math.inf


def headline(changes: list[Change], kind: str) -> str:
    """'16 metrics paired: 3 decided (1 significant), 13 undecided: need history or repeats — run the
    survey again': decided, significant and undecided counted apart, and what would decide the rest."""
    decided = [c for c in changes if c.significant is not None]
    paired_ = f"{len(changes)} metric{'s' * (len(changes) != 1)} paired: "
    line = paired_ + f"{len(decided)} decided ({sum(bool(c.significant) for c in decided)} significant)"
    undecided = len(changes) - len(decided)
    if not undecided:
        return line
    again = f"need history or repeats — run {'the survey' if kind == 'survey' else 'it'} again"
    if not decided:    # no "0 significant": nothing was decided
        return paired_ + f"none decided: {again}"
    return line + f", {undecided} undecided: {again}"


def advice(changes: list[Change]) -> str | None:
    """Why the undecided changes are undecided, and what would decide them; None when none is."""
    whys = sorted({c.why for c in changes if c.significant is None and c.why})
    n = sum(c.significant is None for c in changes)
    return f"{n} metric{'s' * (n != 1)} undecided ({VERDICT[None]}): " + "; ".join(whys) if n else None


def _mid(xs: list[float]) -> float:
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2
