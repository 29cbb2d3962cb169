"""Before and after: two runs (or two surveys) metric by metric, with whether
each change is significant.

Runs are paired by kind and host (and, for HPL tests, by their parameters).
A benchmark family's metrics are its figures (Family.metrics), paired by key, and
only when measured at the same point (Figure.at: a working set, a sweep's range):
the rest is listed as not compared, with why; two sides with nothing to pair are
refused;
significance is Welch's t-test on independent repeats (a figure's own repeats,
or several runs on each side), never on blocks timed inside one run, with
Holm's adjustment over all the metrics compared, so that pairing many metrics
does not make some of them "significant" by chance. A change also has to be at least
`min_change` (relative) to be called significant: with enough repeats Welch's test separates
differences of a percent or two (a neighbour's load on a shared memory bus), which no before/after
decision should turn on; such changes read "below the minimum change"."""

from __future__ import annotations

import math
from dataclasses import dataclass

from rmax.errors import RmaxError
from rmax.stats import MIN_CHANGE, differ_significantly, holm
from rmax.store import Store
from rmax.store.runs import RunRecord

# How a change reads: significant, not, or undecidable without independent repeats.
VERDICT = {True: "yes", False: "no", None: "not enough runs to decide"}


@dataclass
class Change:
    kind: str
    host: str
    metric: str
    unit: str
    a: float
    b: float
    n_a: int
    n_b: int
    p_value: float | None      # Welch's t-test of this metric alone
    significant: bool | None   # on the Holm-adjusted p-value; None: too few repeats to say
    p_adjusted: float | None = None
    small: bool = False        # separable by the test, but below the minimum change

    @property
    def change(self) -> float:
        return (self.b - self.a) / self.a if self.a else math.nan

    def as_dict(self) -> dict:
        return {**self.__dict__, "change": self.change}


def _pair_key(r: RunRecord) -> tuple:
    hosts = r.hosts or [r.hostname or "this host"]   # a local run may record no hosts: where rmax ran
    host = ",".join(hosts)
    if r.kind == "hpl-test":
        p = r.params
        return (r.kind, host, p.get("code"), p.get("n"), p.get("nb"), p.get("p"), p.get("q"))
    return (r.kind, host)


def _test_rates(tests: list[RunRecord]) -> list[float]:
    """The GFLOPS of HPL tests, from their typed summaries (tests stored in another shape are skipped)."""
    from rmax.bench.family import StaleSummary
    from rmax.bench.hpl import HplTestSummary

    out = []
    for t in tests:
        try:
            out.append(HplTestSummary.load(t.summary).gflops)
        except StaleSummary:
            continue
    return out


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
    from rmax.bench.family import loaded

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
    changes: list[Change] = []
    # an HPL run is compared through its tests, which pair by N, NB and grid (and say when alone)
    skipped = [f"not compared: {_where(k)}: only in {'A' if ra else 'B'}" for k, (ra, rb) in groups.items()
               if not (ra and rb) and k[0] not in ("info", "hpl")]
    for key, (ra, rb) in groups.items():
        if not ra or not rb:
            continue
        kind, host = key[0], key[1]
        if kind == "hpl-test":
            # Repeated HPL tests with the same parameters are the samples.
            ga, gb = _test_rates(ra), _test_rates(rb)
            if not ga or not gb:
                continue
            label = f"{key[2]} N={key[3]} NB={key[4]} {key[5]}x{key[6]}: GFLOPS"
            changes.append(_change(kind, host, label, "GFLOPS", ga, gb, ga, gb))
            continue
        _family_changes(kind, host, ra, rb, changes, skipped)
    _adjust(changes, min_change)
    changes.sort(key=lambda c: (c.kind, c.host, c.metric))
    fps = [{r.fingerprint for r in runs if r.fingerprint} for runs in (a, b)]
    machine = ([f"A and B ran on different machine fingerprints ({', '.join(sorted(fps[0]))} against "
                f"{', '.join(sorted(fps[1]))}): the hardware or software (CPU, memory, kernel, MPI, BLAS) changed "
                "between them, and a change may come from that"] if fps[0] and fps[1] and fps[0] != fps[1] else [])
    return a, b, changes, machine + sorted(skipped)


def _change(kind: str, host: str, metric: str, unit: str, va: list[float], vb: list[float], sa: list[float],
            sb: list[float]) -> Change:
    """The change of one metric: values va, vb (their medians shown), tested on repeats sa, sb."""
    _, p = differ_significantly(sa, sb)
    return Change(kind, host, metric, unit, _mid(va), _mid(vb), len(sa), len(sb), None if math.isnan(p) else p, None)


def _adjust(changes: list[Change], min_change: float = MIN_CHANGE, alpha: float = 0.05) -> None:
    """Holm's adjustment over every tested change; the verdict is on the adjusted p-value and the
    size of the change."""
    adjusted = holm([math.nan if c.p_value is None else c.p_value for c in changes])
    for c, p in zip(changes, adjusted):
        if not math.isnan(p):
            c.small = p < alpha and not abs(c.change) >= min_change
            c.p_adjusted, c.significant = p, p < alpha and not c.small


def _family_changes(kind: str, host: str, ra: list[RunRecord], rb: list[RunRecord], out: list[Change],
                    skipped: list[str]) -> None:
    """The changes of a family's runs (none for runs of no family: an inventory, a tuning session);
    a figure measured at different points (Figure.at), or on one side only, goes to `skipped`."""
    from rmax.bench.family import loaded

    sides = []
    for runs in (ra, rb):
        figs: dict[str, list] = {}
        for r in runs:
            got = loaded(r)
            for f in (got[0].metrics(got[1]) if got else []):
                figs.setdefault(f.key, []).append(f)
        sides.append(figs)
    for side, mine, other in (("A", sides[0], sides[1]), ("B", sides[1], sides[0])):
        alone = sorted({mine[k][-1].metric for k in mine.keys() - other.keys()})
        if alone:
            skipped.append(f"not compared: {kind} on {host}: only in {side}: " + "; ".join(alone[:4])
                           + (f" and {len(alone) - 4} more" if len(alone) > 4 else ""))
    for key in sides[0].keys() & sides[1].keys():
        fa, fb = sides[0][key], sides[1][key]
        at_a, at_b = {f.at for f in fa}, {f.at for f in fb}
        if len(at_a | at_b) > 1:
            name = fa[-1].metric.split(" (")[0]
            skipped.append(f"not compared: {kind} on {host}, {name}: measured at {' / '.join(sorted(map(str, at_a)))} in A and "
                           f"{' / '.join(sorted(map(str, at_b)))} in B, not the same quantity")
            continue
        # Samples: the runs themselves when a side has several, else the one run's own repeats.
        sa = [f.value for f in fa] if len(fa) > 1 else list(fa[0].repeats)
        sb = [f.value for f in fb] if len(fb) > 1 else list(fb[0].repeats)
        out.append(_change(kind, host, fa[-1].metric, fa[-1].unit, [f.value for f in fa], [f.value for f in fb],
                           sa, sb))


def _mid(xs: list[float]) -> float:
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2
