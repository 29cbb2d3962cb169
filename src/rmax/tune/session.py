"""A tuning session: a stored run of kind `tune` whose children are its trials
(one `hpl` run each, with its `hpl-test`), written the moment each trial ends.

Resume works by replay. Every strategy is deterministic given the results it
sees (the Bayesian one through a fixed sampler seed), so `--resume ID` runs the
same strategy again and answers each trial it asks for from the stored trials,
in order, without running HPL; the first trial with no stored answer is where
the interrupted session stopped, and from there trials run live. Interrupted
trials (Ctrl-C mid-run) are not answers and run again; so do the failed trials
of a streak that made the session give up (a lost node), since the failure was
the node's, not the candidate's."""

from __future__ import annotations

import math
import os
from collections import defaultdict, deque
from pathlib import Path
from typing import Callable

from rmax.errors import RmaxError, RunFailed
from rmax.hpl.dat import HplConfig, render
from rmax.model.hpl_model import hpl_flops
from rmax.stats import differ_significantly
from rmax.store import Store
from rmax.store.runs import Run, process_identity
from rmax.textfile import write_atomic
from rmax.tune import steps, table
from rmax.tune.effects import effect_sizes
from rmax.tune.evaluator import Budget, BudgetExhausted, Duel, Evaluator, Measurement
from rmax.tune.noise import challenge, noise_cv
from rmax.tune.settings import Settings
from rmax.tune.space import Space, from_config, key, n_from_memory, to_config, variant_code
from rmax.tune.strategies import get_strategy

LAUNCH_OVERHEAD_S = 3.0      # mpirun start-up, matrix generation and the residual check, roughly
FAILED_STREAK = 3            # this many failed trials in a row: nodes are lost, stop and leave it resumable
REDUCED_FACTOR = 2           # reduced N = full N / 2: an eighth of the time (T ~ N^3)
MIN_REDUCED_N = 500
# Without --n, a full-N trial takes at most this share of a time budget: the stock start and the
# confirmation at full N, and the search at reduced N (an eighth of the time each), all fit.
TRIAL_SHARE = 1 / 8
CONFIRM = "the best at full N vs the stock HPL.dat"


class NodesLost(Exception):
    pass


def build_space(settings: Settings, facts: dict, ranks: int, nbs: list[int], nb_source: str) -> Space:
    """The space, with N from --n, else from memory (--mem-fraction) and, when there is a time
    budget, from the time: the smaller of the two, saying which."""
    from rmax.model.hpl_model import n_for_flops

    if settings.n:
        n_full, n_source = settings.n, "--n"
    else:
        mem = (facts.get("memory_bytes_per_node") or 0) * facts.get("nodes", 1)
        if not mem:
            raise RmaxError("the inventory does not know this node's memory", hint="give the problem size with --n")
        n_full, n_source = n_from_memory(mem, settings.mem_fraction), f"{settings.mem_fraction:.0%} of memory"
        rate = facts.get("rate_guess_gflops")
        if settings.budget_s and rate:
            seconds = max(1.0, settings.budget_s * TRIAL_SHARE - LAUNCH_OVERHEAD_S)
            n_time = int(n_for_flops(seconds * rate * 1e9))
            if n_time < n_full:
                n_full, n_source = n_time, (f"the {settings.budget_s:.0f} s budget: a full-N trial of about "
                                            f"{seconds:.0f} s at a first-guess {rate:.1f} GFLOPS")
    n_reduced = max(min(n_full, MIN_REDUCED_N), n_full // REDUCED_FACTOR)
    return Space(ranks=ranks, n_full=n_full, n_reduced=n_reduced, nb=nbs, nb_source=nb_source,
                 threshold=settings.threshold, n_source=n_source)


def predicted_seconds(n: int, rate_gflops: float) -> float:
    return hpl_flops(n) / (rate_gflops * 1e9) + LAUNCH_OVERHEAD_S


class HplObjective:
    """One trial = one rmax/hpcc/xhpl execution of a one-test HPL.dat, stored under the session."""

    def __init__(self, session: "Session"):
        self.s = session
        self.streak: list[str] = []

    def rate(self) -> tuple[float, bool]:
        """The slowest rate measured so far (a safe basis for timeouts), or the first guess."""
        ok = [t.m.gflops for t in self.s.ev.history if t.m.ok] if self.s.ev else []
        return (min(ok), True) if ok else (self.s.facts["rate_guess_gflops"], False)

    def __call__(self, cand: dict) -> Measurement:
        s = self.s
        stored = s.replay.get(key(cand))
        if stored:
            m = stored.popleft()
            s.show(cand, m, "stored")
            return m
        rate, measured = self.rate()
        pred = predicted_seconds(cand["n"], rate)
        if pred > s.ev.budget.seconds_left:
            raise BudgetExhausted
        timeout = s.settings.timeout or (4 * pred + 30 if measured else 10 * pred + 60)
        from rmax.bench.family import RunContext, run
        from rmax.bench.hpl import HPL

        o = HPL.options(config=to_config(cand, s.settings.threshold), engine=s.settings.engine,
                        blas={"name": s.facts["blas"]})
        rec = run(HPL, o, RunContext(store=s.store, parent=s.run.id, label=f"tune trial {len(s.ev.history) + 1}",
                                     spec=s.spec, launcher=s.settings.launcher, timeout=timeout,
                                     on_progress=s.on_progress))
        m = measurement(rec)
        s.show(cand, m, (rec.error or "")[:60] if not m.ok else "")
        self.streak = self.streak + [rec.id] if m.status == "failed" else []
        if len(self.streak) >= FAILED_STREAK:
            raise NodesLost(list(self.streak))
        return m


def measurement(run) -> Measurement:
    """A trial's measurement: its one test's rate and time, from the HPL run's typed summary."""
    from rmax.bench.family import loaded

    got = loaded(run)
    t = got[1].tests[0] if got and got[1].tests else None
    g = t.gflops if t else None
    status = run.status if run.status in ("ok", "invalid") else "failed"
    if status == "ok" and not g:
        status = "failed"
    return Measurement(g if status == "ok" else None, status, run.duration or 0.0, run.id,
                       time_s=t.time_s if t else None)


class Session:
    def __init__(self, store: Store, run: Run, settings: Settings, space: Space, facts: dict,
                 echo: Callable[[str], None], replay: dict | None = None):
        self.store, self.run, self.settings, self.space, self.facts, self.echo = store, run, settings, space, facts, echo
        self.replay = replay or {}
        self.on_progress: Callable | None = None   # a trial's HPL progress (rmax.hpl.progress.Progress)
        self.ev: Evaluator | None = None
        self.chosen: dict | None = None   # the configuration the steps kept last (execute)
        self.start_gflops: float | None = None
        self.start_n: int | None = None
        from rmax.launch.request import spec_from_options

        st = settings
        self.spec = spec_from_options([], np=st.np, hosts=st.hosts, hostfile=st.hostfile, bind=st.bind,
                                      blas_threads=st.blas_threads, oversubscribe=st.oversubscribe,
                                      net_if=st.net_if)

    # --- creation and resumption ---------------------------------------------------------------
    @classmethod
    def create(cls, store: Store, settings: Settings, echo, check=None) -> "Session":
        """Plan the session (facts, space); `check(space, facts)` may refuse it before anything is stored."""
        from rmax.launch.request import spec_from_options
        from rmax.tune.facts import gather
        from rmax.tune.nb_seed import nb_candidates

        spec = spec_from_options([], np=settings.np, hosts=settings.hosts, hostfile=settings.hostfile,
                                 bind=settings.bind, blas_threads=settings.blas_threads,
                                 oversubscribe=settings.oversubscribe, net_if=settings.net_if)
        settings.np = spec.np
        nodes = len({h.name for h in spec.hosts}) if spec.hosts else 1
        threads = settings.blas_threads
        nbs, nb_source, sweep = nb_candidates(store)
        facts = gather(store, spec.np, nodes, threads, nbs[0])
        space = build_space(settings, facts, spec.np, nbs, nb_source)
        if check:
            check(space, facts)     # refused on what is stored, before the session measures anything
        # Stored from here on, so that a session stopped while it seeds NB and the DGEMM bound
        # (seconds of DGEMM) is in the store, interrupted and resumable, with its plan so far.
        run = store.start_run("tune", params={"settings": settings.to_dict(), "space": space.to_dict(),
                                             "facts": facts}, label=f"rmax tune ({settings.strategy})")
        try:
            space = cls._seed(store, settings, spec.np, threads, facts, space, sweep, run)
        except KeyboardInterrupt:
            run.finish("interrupted", "stopped while seeding NB and the DGEMM bound")
            raise
        except BaseException as e:
            run.finish("failed", f"seeding NB and the DGEMM bound: {e}")
            raise
        run.update(params={"settings": settings.to_dict(), "space": space.to_dict(), "facts": facts})
        return cls(store, run, settings, space, facts, echo)

    @staticmethod
    def _seed(store: Store, settings: Settings, np: int, threads, facts: dict, space, sweep, run) -> "Space":
        """NB candidates and the DGEMM bound from this session's own DGEMM runs (stored under
        the session) when none are stored; the space planned with them."""
        from rmax.bench.dgemm import hpl_update_shape
        from rmax.tune import own_dgemm
        from rmax.tune.facts import dgemm_bound, with_bound
        from rmax.tune.nb_seed import nb_candidates

        def own(rid: str) -> None:      # measured for this session: part of it
            Run(store, store.get(rid)).update(parent=run.id)

        if sweep is None:
            # No full k sweep stored here: measure one now (it seeds NB and gives the DGEMM bound).
            got, what = own_dgemm.k_sweep(store, threads)
            nbs, nb_source, used = nb_candidates(store)
            if got:
                own(got)
                if used == got:
                    nb_source = f"{nb_source}, which this session ran first"
                with_bound(facts, np, *dgemm_bound(store, np, threads, nbs[0])[:2])
            else:
                nb_source = f"{nb_source}; {what}"
            space = build_space(settings, facts, np, nbs, nb_source)
        # The bound at the shape of HPL's trailing update: the start's NB and grid at the full N,
        # measured now when no stored DGEMM has that k.
        h, n = space.heuristic(), space.n_at(True)
        bound, source, at_shape = dgemm_bound(store, np, threads, h["nb"], n, h["grid"])
        if not at_shape:
            got, what = own_dgemm.hpl_shape(store, threads, hpl_update_shape(n, h["nb"], *h["grid"]))
            if got:
                own(got)
                bound, source, _ = dgemm_bound(store, np, threads, h["nb"], n, h["grid"])
            else:
                source = f"{source}; {what}"
        facts["dgemm_bound_gflops"], facts["dgemm_source"] = bound, source
        return space

    @classmethod
    def resume(cls, store: Store, run_id: str, echo) -> "Session":
        rec = store.get(run_id)
        if rec.kind != "tune":
            raise RmaxError(f"run {rec.id[:8]} is a {rec.kind} run, not a tuning session", hint="see `rmax runs list`")
        if rec.status == "ok":
            raise RmaxError(f"tuning session {rec.id[:8]} already finished", hint="start a new one with `rmax tune`")
        if rec.status == "running":
            raise RmaxError(f"tuning session {rec.id[:8]} is still running (process {rec.pid})")
        skip = set((rec.summary or {}).get("lost_trials") or [])
        replay: dict = defaultdict(deque)
        for child in sorted(store.children(rec.id), key=lambda r: r.started_at):
            if child.kind != "hpl" or child.status not in ("ok", "invalid", "failed") or child.id in skip:
                continue
            cand = from_config(HplConfig.from_dict(child.params["hpl"]))
            replay[key(cand)].append(measurement(child))
        run = Run(store, rec)
        # The same session row continues: it is running again, in this process.
        run.update(status="running", ended_at=None, error=None, pid=os.getpid(), proc_start=process_identity())
        p = rec.params
        return cls(store, run, Settings.from_dict(p["settings"]), Space.from_dict(p["space"]), p["facts"], echo,
                   dict(replay))

    def set_timeout(self, seconds: float) -> None:
        """A new per-trial watchdog for the rest of the session, stored with its settings."""
        self.settings.timeout = seconds
        self.run.update(params={**self.run.record.params, "settings": self.settings.to_dict()})

    # --- output ---------------------------------------------------------------------------------
    def show(self, cand: dict, m: Measurement, note: str = "") -> None:
        if self.start_gflops is None and m.ok and self.ev is not None and not self.ev.history:
            self.start_gflops, self.start_n = m.gflops, cand["n"]
            note = (note + " " if note else "") + "stock HPL.dat (start)"
        idx = len(self.ev.history) + 1 if self.ev else 1
        # "vs start" only at the start's own N: a rate at another N differs by the N alone.
        start = self.start_gflops if self.start_n in (None, cand["n"]) else None
        self.echo(table.row(idx, cand, m, self.facts["blas"], self.facts.get("rpeak_gflops"), start, note))

    def checkpoint(self, trial=None) -> None:
        """The session's summary so far, stored after every trial (the trials themselves are stored by the hpl family)."""
        best = self.ev.best(self.at_full_n) if self.ev else None
        self.run.update(summary={"trials": len(self.ev.history) if self.ev else 0,
                                 "start_gflops": self.start_gflops,
                                 "best_so_far": {"gflops": best[1], "code": variant_code(best[0]), "n": best[0]["n"],
                                                 "nb": best[0]["nb"], "grid": list(best[0]["grid"])} if best else None})

    def at_full_n(self, cand: dict) -> bool:
        return cand["n"] == self.space.sized(cand, True)["n"]

    # --- the search -----------------------------------------------------------------------------
    def budget(self) -> Budget:
        return Budget(trials=self.settings.trials, seconds=self.settings.budget_s)

    def execute(self) -> dict:
        st, space = self.settings, self.space
        self.ev = ev = Evaluator(HplObjective(self), self.budget(), after=self.checkpoint)
        self.echo(f"tuning session {self.run.id[:8]} (resume with: rmax tune --resume {self.run.id[:8]})")
        self.echo(f"N {space.n_at(True)} from {space.n_source} (search at {space.n_at(False)}), NB candidates {space.nb} from {space.nb_source}; "
                  f"grids {', '.join(f'{p}x{q}' for p, q in space.grid)}; engine {st.engine}, {space.ranks} ranks")
        bound = self.facts.get("dgemm_bound_gflops")
        self.echo(f"DGEMM bound {bound:.1f} GFLOPS: {self.facts.get('dgemm_source')}" if bound
                  else f"DGEMM bound unknown: {self.facts.get('dgemm_source')}")
        self.echo(table.header())
        try:
            stock = space.sized(space.stock(), full=True)
            try:
                ev.sample(stock)
            except BudgetExhausted:     # not even the first trial fits: a refusal, not a search
                why = (f"the budget left ({ev.budget.seconds_left:.0f} s) is shorter than one HPL trial at "
                       f"N={stock['n']} is predicted to take ({predicted_seconds(stock['n'], self.facts['rate_guess_gflops']):.0f} s)")
                self.run.finish("failed", why)
                raise RunFailed(why, hint="give a longer budget or a smaller --n") from None
            reduced = space.sized(stock, False)["n"] != stock["n"]
            rate = self.facts["rate_guess_gflops"]
            if reduced:
                # Hold back one full-N trial for the confirmation.
                ev.budget.reserve_trials = 1 if st.trials else 0
                ev.budget.reserve_seconds = predicted_seconds(stock["n"], rate) if st.budget_s else 0.0
            name = st.strategy
            kw = {}
            if name == "auto":
                per_trial = predicted_seconds(space.sized(stock, False)["n"], rate)
                kw["trials_hint"] = min(ev.budget.trials_left, ev.budget.seconds_left / per_trial)
            strategy = get_strategy(name)(space, ev, cap=st.cap, seed=st.seed, full=not reduced,
                                          log=lambda msg: self.echo(f"      {msg}"), store=self.store, **kw)
            inc = strategy.run()
            ev.budget.reserve_trials, ev.budget.reserve_seconds = 0, 0.0
            # What the session ends with is what its steps kept: the strategy's incumbent at full N,
            # or, after a search at reduced N, its best only if it beat the stock at full N.
            self.chosen = inc if not reduced else stock
            if inc is not None and reduced:
                full = space.sized(inc, True)
                try:
                    if key(full) != key(stock) and not ev.known_bad(stock) and ev.samples(stock):
                        if challenge(ev, full, stock, st.cap, label=CONFIRM).better:
                            self.chosen = full
                    elif key(full) != key(stock):
                        ev.sample(full)
                        ev.duels.append(Duel(None, full, None, label=CONFIRM))
                        self.chosen = full      # no valid stock to beat
                except BudgetExhausted:
                    pass
                if not ev.samples(full) and not ev.known_bad(full):
                    strategy.notes.append("no budget left to confirm the best at full N")
        except NodesLost as lost:
            self.run.update(summary={**self.run.record.summary, "lost_trials": lost.args[0]})
            self.run.finish("interrupted", f"{FAILED_STREAK} trials in a row failed (a lost node?)")
            raise RunFailed(f"{FAILED_STREAK} trials in a row failed (a lost node?): session {self.run.id[:8]} stopped",
                            hint=f"fix the nodes, then: rmax tune --resume {self.run.id[:8]}") from None
        return self.finish(strategy)

    def kept_best(self) -> tuple[dict, float] | None:
        """The configuration the steps kept last, with its mean GFLOPS: never one that merely had a
        higher mean without beating its incumbent significantly. Without one (the search stopped
        early), the best valid full-N trial."""
        ev, c = self.ev, self.chosen
        if c is not None and ev.samples(c) and not ev.known_bad(c):
            return c, ev.mean(c)
        return ev.best(self.at_full_n)

    def best_bound(self, cand: dict) -> tuple[float | None, str]:
        """The DGEMM bound at the shape of the best's own trailing update (its N, NB and grid),
        measured now when no stored DGEMM has it; else the session's first bound."""
        from rmax.bench.dgemm import hpl_update_shape
        from rmax.tune import own_dgemm
        from rmax.tune.facts import dgemm_bound

        args = (self.store, self.space.ranks, self.settings.blas_threads, cand["nb"], cand["n"], cand["grid"])
        bound, source, at_shape = dgemm_bound(*args)
        if not at_shape:
            shape = hpl_update_shape(cand["n"], cand["nb"], *cand["grid"])
            if own_dgemm.hpl_shape(self.store, self.settings.blas_threads, shape, parent=self.run.id)[0]:
                bound, source, at_shape = dgemm_bound(*args)
        if bound is None or not at_shape and self.facts.get("dgemm_bound_gflops"):
            return self.facts.get("dgemm_bound_gflops"), self.facts.get("dgemm_source")
        return bound, source

    def finish(self, strategy) -> dict:
        ev, st = self.ev, self.settings
        start = ev.history[0] if ev.history else None
        best = self.kept_best()
        cv = noise_cv(ev)
        ok = [(t.cand, t.m.gflops) for t in ev.history if t.m.ok]
        counts = {s: sum(t.m.status == s for t in ev.history) for s in ("ok", "invalid", "failed")}
        summary = {"trials": len(ev.history), "status_counts": counts, "strategy": strategy.name,
                   "strategy_notes": strategy.notes, "noise_cv": cv,
                   "start": {"gflops": start.m.gflops if start and start.m.ok else None,
                             "status": start.m.status if start else None, "code": variant_code(start.cand) if start else None,
                             "n": start.cand["n"] if start else None},
                   "effects": effect_sizes(ok, cv), "best": None,
                   "steps": steps.build(ev, self.space.sized(self.space.stock(), True))}
        if best is None:
            self.run.update(summary=summary)
            self.run.finish("failed", "no valid trial: every trial failed or was invalid")
            raise RunFailed(f"tuning session {self.run.id[:8]}: no valid trial ({counts['invalid']} invalid, "
                            f"{counts['failed']} failed)", hint="see `rmax runs show " + self.run.id[:8] + "`")
        cand, g = best
        cfg = to_config(cand, st.threshold)
        path = Path(st.out)
        write_atomic(path, render(cfg, title=f"HPL.dat tuned by rmax (session {self.run.id[:8]}): {g:.3f} GFLOPS"),
                     "the tuned HPL.dat")
        x = summary["start"]["gflops"]
        rp = self.facts.get("rpeak_gflops")
        bound, bound_source = self.best_bound(cand)
        # A gain counts only when significant: say whether the best's samples separate from the start's.
        sig, p_value = (differ_significantly(ev.samples(cand), ev.samples(start.cand))
                        if start and start.m.ok and key(cand) != key(start.cand) else (False, math.nan))
        summary["best"] = {"gflops": g, "statistic": f"mean of {len(ev.samples(cand))} trial(s)", "n": cand["n"],
                           "significant": sig, "p_value": p_value,
                           "nb": cand["nb"], "grid": list(cand["grid"]), "code": variant_code(cand),
                           "candidate": {**cand, "grid": list(cand["grid"])}, "hpl_dat": str(path.resolve()),
                           "gain_pct": 100 * (g / x - 1) if x else None,
                           "pct_rpeak": 100 * g / rp if rp else None,
                           "pct_dgemm_bound": 100 * g / bound if bound else None}
        summary["rpeak_gflops"], summary["rpeak_basis"] = rp, self.facts.get("rpeak_basis")
        summary["dgemm_bound_gflops"], summary["dgemm_source"] = bound, bound_source
        self.run.update(summary=summary)
        self.run.finish("ok")
        return summary
