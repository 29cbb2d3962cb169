"""The models' measured inputs, pulled from the store and the inventory.

The models themselves are pure functions of plain numbers; this adapter finds
those numbers: gamma3 (seconds per DGEMM flop of one process) from the latest
`dgemm` run or from the DGEMM that hpcc runs beside its HPL; alpha and beta
(Hockney latency in s, bandwidth in bytes/s) from the latest `net` run or from
hpcc's ping-pong; memory, cores and Rpeak per node from the inventory. Each
value says where it came from, and a missing one is a one-line error naming the
command that measures it. Explicit values (--alpha, --beta, --gamma) bypass all
of this.

Each measured value also carries its range, for the prediction's interval: alpha
and beta their Hockney fit's 95% intervals; gamma3 the slowest and fastest timed
blocks of its DGEMM point (how far the rate a run meets moves, not the median's
precision); none for hpcc's single numbers (said). And its warnings, which the
prediction repeats: a Hockney fit poor by its own test, a run measured on a busy
node (rmax.inventory.load: others used the CPUs while it ran)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator

from rmax.errors import MissingData, RmaxError
from rmax.model.hpl_model import Observation, measured_time
from rmax.model.provenance import Scope, cite
from rmax.store import Store
from rmax.store.runs import RunRecord

# How far back the store is searched for a run that matches the question.
HISTORY = 500


@dataclass(frozen=True)
class Measured:
    value: float
    source: str
    at: str = ""            # when it was measured (ISO time), for choosing the latest
    at_hpl_shape: bool = False   # a DGEMM rate measured at HPL's trailing-update shape (gamma3_from_store)
    interval: tuple[float, float] | None = None   # its range (module note); None: unknown
    warnings: tuple[str, ...] = ()                # why the value may be poor

    @property
    def exact(self) -> bool:
        """Given on the command line: taken as it is."""
        return self.source.startswith("given")

    def as_dict(self) -> dict:
        return {"value": self.value, "source": self.source, "measured_at": self.at or None,
                "interval": list(self.interval) if self.interval else None, "warnings": list(self.warnings)}


def busy_warning(run: RunRecord, what: str) -> tuple[str, ...]:
    """A warning when `run` was measured on a busy node, else none."""
    from rmax.inventory.load import busy_line

    line = busy_line(run.load)
    return (f"{what} was measured on a busy node ({cite(run)}: {line})",) if line else ()


def _hpcc_block(run: RunRecord | None) -> dict:
    """hpcc's key=value summary block of an `hpl` run (the hpl family's summary), or {}."""
    from rmax.families import loaded

    got = loaded(run) if run is not None and run.kind == "hpl" else None
    return (got[1].hpcc_summary or {}) if got else {}


def _hpcc_summaries(store: Store, scope: Scope) -> Iterator[tuple[RunRecord, dict]]:
    for r in store.list(kind="hpl", status="ok", limit=HISTORY):
        hs = _hpcc_block(r)
        if hs and scope.matches(r):
            yield r, hs


def _missing(what: str, kind: str, scope: Scope, store: Store, command: str, hint: str) -> MissingData:
    """The error for a missing input: says whether runs exist elsewhere and what to measure here."""
    elsewhere = [r for r in store.list(kind=kind, status="ok", limit=HISTORY) if not scope.matches(r)]
    note = (f" ({len(elsewhere)} stored {kind} run(s) were measured elsewhere: other hosts, machine or software)"
            if elsewhere else "")
    return MissingData(f"no {what} measured on {scope.describe()}{note}: run `{command}` first", hint=hint)


def _float(text) -> float | None:
    try:
        v = float(text)
    except (TypeError, ValueError):
        return None
    return v if v > 0 else None


# --- gamma3 -----------------------------------------------------------------------------

def _dgemm_rate(run: RunRecord, nb: int | None, threads: int | None = None,
                shape: tuple[int, int, int] | None = None) -> tuple[float, str, bool, tuple[float, float]] | None:
    """(GFLOPS, which point, whether at HPL's shape, its slowest and fastest blocks' GFLOPS): the DGEMM
    rate that best stands for HPL's
    trailing update, an (m x NB) by (NB x n) product. With `shape` (HPL's,
    rmax.families.dgemm.hpl_update_shape), the run's shape point with k = NB whose m, n are nearest;
    else the sweep point with k nearest NB, then the largest m; else the largest size. With
    `threads`, only a run with that many BLAS threads stands for a rank that has them."""
    from rmax.families import loaded

    got = loaded(run)
    if got and threads is not None and got[1].threads != threads:
        return None
    s = got[1] if got else None
    at = s.at_shape(*shape) if s is not None and shape else None
    if at:
        p = at[1]
        return p.median, (f"median GFLOPS at m={p.m} n={p.n} k={p.k}, {s.threads} thread(s): the measured shape "
                          f"nearest HPL's m={shape[0]} n={shape[1]} k={shape[2]}"), True, (p.min, p.max)
    rows = [(p.m, p.n, p.k, p.median, (p.min, p.max)) for p in (s.square + s.k if s else []) if p.median > 0]
    if not rows:
        return None
    if nb:
        kbest = min({r[2] for r in rows}, key=lambda k: (abs(k - nb), -k))
        cand = [r for r in rows if r[2] == kbest]
    else:
        cand = rows
    m, n, k, g, spread = max(cand, key=lambda r: (r[0] * r[1], r[3]))
    not_hpl = (f"; not at HPL's shape m={shape[0]} n={shape[1]} k={shape[2]}: no shape with k={shape[2]} measured"
               if shape else "")
    return g, f"median GFLOPS at m={m} n={n} k={k}, {s.threads} thread(s){not_hpl}", False, spread


def gamma3_from_store(store: Store, nb: int | None = None, scope: Scope | None = None,
                      threads: int | None = None, n: int | None = None,
                      grid: tuple[int, int] | None = None) -> Measured:
    """Seconds per flop of one process's DGEMM: the latest of a `dgemm` run and hpcc's StarDGEMM
    (per process, all ranks running at once, as in HPL) measured on a node of the scope.
    `threads`: the BLAS threads of one rank; a DGEMM measured with other threads does not count
    (hpcc's StarDGEMM counts for one-thread ranks only). With HPL's N and grid (and `nb`), the
    latest run that measured a shape with k = NB is preferred to later ones that did not, its
    point nearest HPL's trailing-update shape used (then hpcc's StarDGEMM, a square product, is not)."""
    from rmax.families.dgemm import hpl_update_shape

    scope = scope or Scope.here()
    shape = hpl_update_shape(n, nb, *grid) if n and nb and grid else None
    cands: list[Measured] = []
    # The latest usable run; with a shape, the latest that measured it if any (read no further).
    picked = None
    for r in store.list(kind="dgemm", status="ok", limit=HISTORY):
        got = _dgemm_rate(r, nb, threads, shape) if scope.on_a_node(r) else None
        if got:
            picked = picked or (r, got)
            if got[2] or shape is None:
                picked = (r, got)
                break
    if picked:
        r, (g, how, at_shape, (slow, fast)) = picked
        cands.append(Measured(1e-9 / g, f"{cite(r)}: {g:.2f} GFLOPS per process ({how})", r.started_at, at_shape,
                              (1e-9 / fast, 1e-9 / slow) if slow > 0 else None,
                              busy_warning(r, "gamma3 (its DGEMM rate)")))
        if at_shape:
            return cands[0]     # HPL's own shape: closer to its update than hpcc's square StarDGEMM
    for r, hs in (_hpcc_summaries(store, scope) if threads in (None, 1) else []):
        g = _float(hs.get("StarDGEMM_Gflops"))
        if g:
            cands.append(Measured(1e-9 / g, f"hpcc StarDGEMM in {cite(r)}: {g:.2f} GFLOPS per process",
                                  r.started_at, warnings=busy_warning(r, "gamma3 (hpcc's StarDGEMM)")))
            break
    if not cands:
        with_threads = f" --threads {threads}" if threads else ""
        raise _missing("DGEMM rate" + (f" with {threads} BLAS thread(s)" if threads else ""), "dgemm", scope, store,
                       f"rmax bench dgemm{with_threads}", "or give --gamma SECONDS_PER_FLOP")
    return max(cands, key=lambda m: m.at)


# --- alpha, beta ------------------------------------------------------------------------

def _hockney(s):
    """The Hockney fit of a net run (s: its typed summary) that stands for HPL's messages, and the
    name of its layer: the blocking MPI ping-pong layer when it has a fit, else the first other MPI
    layer, else any; None without one. The name says when its own fit was poor."""
    fitted = [x for x in s.layers if x.fit and x.fit.alpha >= 0 and x.fit.beta > 0]
    exact = [x for x in fitted if x.name == "mpi"]
    mpi = [x for x in fitted if "mpi" in x.name]
    best = (exact or mpi or fitted or [None])[0]
    if best is None:
        return None
    poor = (f"; a poor fit by its own test: relative RMS residual {best.fit.rms_rel_residual:.2f}"
            if best.fit.quality != "good" else "")
    return best.fit, best.name + poor


def _finite_range(ci) -> tuple[float, float] | None:
    """A fit's interval as a range of the value (a bound below 0 is 0; an infinite upper bound, a beta
    the points could not bound, stays infinite); None when it is missing."""
    if not ci or len(ci) != 2 or any(v is None or v != v for v in ci):
        return None
    return max(0.0, float(ci[0])), float(ci[1])


def network_from_store(store: Store, scope: Scope | None = None) -> tuple[Measured, Measured]:
    """Hockney alpha (s) and beta (bytes/s): the latest of a `net` run's fit and hpcc's ping-pong,
    measured between the scope's hosts (on one node: between ranks of this node)."""
    from rmax.families import loaded

    scope = scope or Scope.here()
    cands: list[tuple[Measured, Measured]] = []
    unfitted = 0
    for r in store.list(kind="net", status="ok", limit=HISTORY):
        typed = loaded(r) if scope.matches(r) else None
        if typed is None:
            continue   # elsewhere, or stored by an older rmax in another shape: not misread
        got = _hockney(typed[1])
        if not got:
            unfitted += 1
            continue
        fit, layer = got
        src = f"{cite(r)}: Hockney fit" + (f" ({layer})" if layer else "")
        warn = busy_warning(r, "alpha and beta (their net run)")
        if fit.quality != "good":
            warn = (f"alpha and beta come from a poor Hockney fit ({cite(r)}, layer {layer.split(';')[0]}: relative "
                    f"RMS residual {fit.rms_rel_residual:.2f}): the prediction's latency and bandwidth terms are "
                    "doubtful",) + warn
        cands.append((Measured(fit.alpha, src, r.started_at, interval=_finite_range(fit.alpha_ci95), warnings=warn),
                      Measured(fit.beta, src, r.started_at, interval=_finite_range(fit.beta_ci95), warnings=warn)))
        break
    for r, hs in _hpcc_summaries(store, scope):
        lat, bw = _float(hs.get("AvgPingPongLatency_usec")), _float(hs.get("AvgPingPongBandwidth_GBytes"))
        if lat and bw:
            src = f"hpcc ping-pong in {cite(r)} (average over pairs)"
            warn = busy_warning(r, "alpha and beta (hpcc's ping-pong)")
            cands.append((Measured(lat * 1e-6, src, r.started_at, warnings=warn),
                          Measured(bw * 1e9, src, r.started_at, warnings=warn)))
            break
    if not cands:
        hint = "or give --alpha SECONDS and --beta BYTES_PER_S"
        if unfitted:
            raise MissingData(f"{unfitted} net run(s) on {scope.describe()} have no Hockney fit (it needs at least "
                            f"3 message sizes): run `rmax bench net` with its default sizes", hint=hint)
        raise _missing("latency and bandwidth", "net", scope, store, "rmax bench net", hint)
    return max(cands, key=lambda c: c[0].at)


# --- the node ---------------------------------------------------------------------------

@dataclass(frozen=True)
class NodeFacts:
    memory_bytes: float
    cores: int
    rpeak_gflops: float | None
    rpeak_basis: str | None


def peak_basis(store, inv: dict) -> tuple[float | None, str | None]:
    """(GFLOPS, basis) of this node's peak for % of peak: the "Peak used for % of peak" figure of the
    latest peakflops run here measured on a quiet node (the one measurement the survey and the report
    also use; one taken beside other work would make % of peak depend on the load of the moment),
    else the inventory's nominal Rpeak."""
    from rmax.families import loaded, role_figure
    from rmax.inventory.load import busy_line

    scope = Scope.here()
    for run in (store.list(kind="peakflops", status="ok", limit=20) if store is not None else []):
        got = loaded(run) if scope.on_a_node(run) and not busy_line(run.load) else None
        fig = role_figure(got, "peak_basis")
        if fig:
            s = got[1]
            threads = s.results[s.peak_row].threads if s.peak_row is not None else None
            beaten = _dgemm_above(store, scope, threads, fig.value) if threads else None
            if beaten:
                rate, dg = beaten
                # a peak a real kernel beats is no peak: the larger, measured rate is the basis
                return rate, (f"measured: DGEMM on {threads} threads ({cite(dg)}, median of the best size), "
                              f"above the FMA peak of {fig.value:.1f} GFLOPS ({cite(run)}), which was measured low")
            return fig.value, f"{fig.statistic.removeprefix('basis: ')} ({cite(run)})"
    rp = inv.get("rpeak") or {}
    return rp.get("gflops"), rp.get("basis")


def _dgemm_above(store, scope: Scope, threads: int, peak: float) -> tuple[float, RunRecord] | None:
    """The fastest DGEMM run here on `threads` threads, as (GFLOPS, run), when it is above `peak`."""
    from rmax.families import loaded, role_figure

    best = None
    for run in store.list(kind="dgemm", status="ok", limit=HISTORY):
        got = loaded(run) if scope.on_a_node(run) else None
        fig = role_figure(got, "dgemm_node") if got and got[1].threads == threads else None
        if fig and fig.value > peak and (best is None or fig.value > best[0]):
            best = (fig.value, run)
    return best


def node_facts(collect: Callable[..., dict] | None = None, store: Store | None = None) -> NodeFacts:
    """This node's memory, cores and peak for % of peak (peak_basis: the latest peakflops run here,
    else the inventory's nominal Rpeak; the inventory does not measure: it takes seconds)."""
    if collect is None:
        from rmax.inventory import collect
    inv = collect(measure=False)
    mem = (inv.get("memory") or {}).get("total_bytes")
    cores = (inv.get("cpu") or {}).get("cores")
    if not mem or not cores:
        raise RmaxError("the inventory does not know this node's memory or cores", hint="see `rmax info`")
    if store is None:
        from rmax.store import open_store

        with open_store() as own:
            rp, basis = peak_basis(own, inv)
    else:
        rp, basis = peak_basis(store, inv)
    return NodeFacts(float(mem), int(cores), rp, basis)


# --- measured HPL runs ------------------------------------------------------------------

def _test(run: RunRecord):
    """An `hpl-test` run's typed summary (rmax.families.hpl.HplTestSummary), or None when stored in another shape."""
    from rmax.bench.family import StaleSummary
    from rmax.families.hpl import HplTestSummary

    try:
        return HplTestSummary.load(run.summary)
    except StaleSummary:
        return None


def hpl_observations(store: Store, alpha: float, beta: float, gamma3: float, limit: int = 40,
                     paired: bool = True, scope: Scope | None = None) -> list[tuple[Observation, str]]:
    """Ok HPL tests run where the question is (the scope), with the rates to model them. With
    `paired`, a test run by hpcc uses the DGEMM rate hpcc measured in the same execution (the
    machine is shared: its speed drifts)."""
    scope = scope or Scope.here()
    out = []
    for t, par in _tests_in(store, scope, HISTORY):
        if len(out) >= limit:
            break
        s = _test(t)
        if s is None or not s.time_s:
            continue
        g = gamma3
        star = _float(_hpcc_block(par).get("StarDGEMM_Gflops")) if paired else None
        if star:
            g = 1e-9 / star
        out.append((Observation(s.n, s.nb, s.p, s.q, measured_time(s.n, s.gflops, s.time_s), alpha, beta, g), t.id))
    return out


def resolve_rates(store: Store | None, alpha: float | None, beta: float | None, gamma: float | None,
                  nb: int | None = None, scope: Scope | None = None, n: int | None = None,
                  grid: tuple[int, int] | None = None) -> dict[str, Measured]:
    """alpha, beta and gamma3, each given explicitly or found in the store among the scope's runs
    (gamma3 at HPL's trailing-update shape for `n`, `nb` and `grid` where one was measured)."""
    out: dict[str, Measured] = {}
    if alpha is not None:
        out["alpha"] = Measured(alpha, "given (--alpha)")
    if beta is not None:
        out["beta"] = Measured(beta, "given (--beta)")
    if gamma is not None:
        out["gamma3"] = Measured(gamma, "given (--gamma)")
    if ("alpha" not in out or "beta" not in out) and store is not None:
        a, b = network_from_store(store, scope)
        out.setdefault("alpha", a)
        out.setdefault("beta", b)
    if "gamma3" not in out and store is not None:
        out["gamma3"] = gamma3_from_store(store, nb, scope, n=n, grid=grid)
    missing = [k for k in ("alpha", "beta", "gamma3") if k not in out]
    if missing:
        raise RmaxError(f"no value for {', '.join(missing)}")
    return out


def resolve_overhead(store: Store | None, given, no_calibration: bool, alpha: float, beta: float, gamma3: float,
                     obs: list[tuple[Observation, str]] | None = None, scope: Scope | None = None):
    """(Overhead, how it was chosen, Calibration or None): given (an Overhead), none, or fitted to stored HPL
    tests of the scope (`obs` when the caller has read them already)."""
    from rmax.model.hpl_model import REFERENCE, calibrate

    if no_calibration:
        return REFERENCE, "not calibrated (--no-calibration): the reference's model", None
    if given is not None:
        return given, "given on the command line", None
    if obs is None:
        obs = hpl_observations(store, alpha, beta, gamma3, scope=scope) if store is not None else []
    if not obs:
        where = (scope or Scope.here()).describe()
        return REFERENCE, (f"not calibrated: no stored HPL tests on {where} (run `rmax hpl run` at a few N "
                           f"there); the reference's model"), None
    cal = calibrate([o for o, _ in obs])
    ids = ", ".join(i[:8] for _, i in obs[:8]) + (f" and {len(obs) - 8} more" if len(obs) > 8 else "")
    return cal.overhead, (f"calibrated on {cal.points} stored HPL test(s) ({ids}), form chosen by "
                          f"{cal.chosen_by}: rms error {cal.rms_rel_error:.1%} (reference model alone "
                          f"{cal.rms_rel_error_uncalibrated:.1%})"), cal


def _tests_in(store: Store, scope: Scope, limit: int) -> Iterator[tuple[RunRecord, RunRecord | None]]:
    """The ok HPL tests (newest first) run where the scope is, each with its parent HPL run (whose
    fingerprint a test shares)."""
    parents: dict[str, RunRecord | None] = {}
    for t in store.list(kind="hpl-test", status="ok", limit=limit):
        if t.parent and t.parent not in parents:
            try:
                parents[t.parent] = store.get(t.parent)
            except RmaxError:
                parents[t.parent] = None
        par = parents.get(t.parent) if t.parent else None
        if scope.matches(t, par.fingerprint if par else None):
            yield t, par


def best_hpl(store: Store, scope: Scope) -> tuple[float, str] | None:
    """The highest GFLOPS of the ok HPL tests run where the scope is (this machine's hardware
    and software, on exactly its number of nodes), with a description of it."""
    from rmax.model.provenance import run_hosts

    best = None
    for t, _ in _tests_in(store, scope, 500):
        if len(run_hosts(t)) != scope.nodes:
            continue
        s = _test(t)
        if s is not None and (best is None or s.gflops > best[0]):
            best = (float(s.gflops), f"hpl-test {t.id[:8]} ({t.started_at[:10]}, {scope.describe()}): N={s.n} "
                                     f"NB={s.nb} grid {s.p} x {s.q}, best of the ok tests stored there")
    return best
