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
from rmax.store import Store
from rmax.store.runs import Run, process_identity
from rmax.textfile import write_atomic
from rmax.tune import steps, table
from rmax.tune.effects import paired_effects
from rmax.tune.evaluator import Budget, BudgetExhausted, Evaluator, Measurement, Trial
from rmax.tune.noise import BLOCK_RUNS, confirm, noise_cv
from rmax.tune.settings import Settings
from rmax.tune.space import (PARAMS, Space, describe, from_config, grid_text, key, n_from_memory, to_config,
                             variant_code)
from rmax.tune.strategies import get_strategy

LAUNCH_OVERHEAD_S = 3.0      # mpirun start-up, matrix generation and the residual check, roughly
FAILED_STREAK = 3            # this many failed trials in a row: nodes are lost, stop and leave it resumable
REDUCED_FACTOR = 2           # reduced N = full N / 2: an eighth of the time (T ~ N^3)
MIN_REDUCED_N = 500
CONFIRM_PAIRS = 3            # the confirmation: stock, best, stock, ..., stock at full N
CONFIRM_RUNS = 2 * CONFIRM_PAIRS + 1
SEARCH_BLOCK_RUNS = BLOCK_RUNS           # the shortest block of the search
MIN_TRIALS = 1 + SEARCH_BLOCK_RUNS + CONFIRM_RUNS
# Without --n, a full-N trial takes at most this share of a time budget: the stock's first run and
# the confirmation (CONFIRM_RUNS more) take half of it, the search at reduced N the other half.
TRIAL_SHARE = 1 / 16
RESERVE_MARGIN = 1.15        # the confirmation's runs may take a little longer than the first one
CONFIRM = "the best at full N vs the stock HPL.dat"


class NodesLost(Exception):
    pass


def build_space(settings: Settings, facts: dict, ranks: int, nbs: list[int], nb_source: str) -> Space:
    """The space, with N from --n, else from memory (--mem-fraction) and, when there is a time
    budget, from the time: the smaller of the two, saying which. Memory's N and the budget's N are
    kept either way: the session explains its N with them."""
    from rmax.model.hpl_model import n_for_flops

    mem = (facts.get("memory_bytes_per_node") or 0) * facts.get("nodes", 1)
    n_memory = n_from_memory(mem, settings.mem_fraction) if mem else None
    n_budget, budget_text = None, ""
    rate = facts.get("rate_guess_gflops")
    if settings.budget_s and rate:
        seconds = max(1.0, settings.budget_s * TRIAL_SHARE - LAUNCH_OVERHEAD_S)
        n_budget = int(n_for_flops(seconds * rate * 1e9))
        budget_text = (f"the {settings.budget_s:.0f} s budget: a full-N trial of about {seconds:.0f} s "
                       f"(1/{1 / TRIAL_SHARE:.0f} of it) at a first-guess {rate:.1f} GFLOPS")
    if settings.n:
        n_full, n_source = settings.n, "--n"
    else:
        if not n_memory:
            raise RmaxError("the inventory does not know this node's memory", hint="give the problem size with --n")
        n_full, n_source = n_memory, f"{settings.mem_fraction:.0%} of memory"
        if n_budget and n_budget < n_full:
            n_full, n_source = n_budget, budget_text
    n_reduced = max(min(n_full, MIN_REDUCED_N), n_full // REDUCED_FACTOR)
    return Space(ranks=ranks, n_full=n_full, n_reduced=n_reduced, nb=nbs, nb_source=nb_source,
                 threshold=settings.threshold, n_source=n_source, engine=settings.engine,
                 n_memory=n_memory, n_budget=n_budget, n_budget_source=budget_text)


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
        from rmax.bench.family import RunContext
        from rmax.families import run
        from rmax.families.hpl import HPL

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
    from rmax.families import loaded

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
        self.start_gflops: float | None = None
        self.start_n: int | None = None
        self.same: list[str] = []          # parameters not searched on a grid, and why (rmax.tune.equivalence)
        self.memory: dict | None = None    # what a memory-sized run would take
        self.strategy = None
        self.overrun = 0.0                 # seconds the session ran past its time budget (the confirmation)
        self.trial_overrun = 0             # trials it ran past --trials (the confirmation's block run again)
        self.confirmation: dict = {"chosen": None, "runs": [], "stock_runs": [], "ratio": None, "note": ""}
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
        from rmax.families.dgemm import hpl_update_shape
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
        # The start: the first trial, or its retry when it failed once.
        if (self.start_gflops is None and m.ok and self.ev is not None
                and all(key(t.cand) == key(cand) for t in self.ev.history)):
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

    def explain_n(self) -> list[str]:
        """Where N came from, beside memory's N and the budget's N."""
        sp = self.space
        parts = [f"N {sp.n_at(True)} from {sp.n_source} (the search runs at {sp.n_at(False)})"]
        if sp.n_memory:
            parts.append(f"memory's N: {sp.n_memory} ({self.settings.mem_fraction:.0%} of "
                         f"{(self.facts.get('memory_bytes_per_node') or 0) * self.facts.get('nodes', 1) / 2**30:.1f} GiB)")
        if sp.n_budget:
            parts.append(f"the budget's N: {sp.n_budget} ({sp.n_budget_source})")
        return ["; ".join(parts)]

    def memory_run(self, first: Trial) -> dict | None:
        """What a memory-sized run would take, at the rate the first full-N trial measured (HPL runs
        faster at a larger N, so this is an upper bound)."""
        n = self.space.n_memory
        if not n or not first.m.ok:
            return None
        return {"n": n, "rate_gflops": first.m.gflops, "seconds": hpl_flops(n) / (first.m.gflops * 1e9),
                "at_n": first.cand["n"]}

    def reserve(self, first: Trial, stock: dict) -> float:
        """Hold back the confirmation's runs, timed from the first full-N trial's own wall time (the
        first guess only when that trial gave nothing)."""
        b = self.ev.budget
        per_run = first.m.seconds if first.m.ok and first.m.seconds else predicted_seconds(
            stock["n"], self.facts["rate_guess_gflops"])
        b.reserve_trials = CONFIRM_RUNS if self.settings.trials else 0
        b.reserve_seconds = CONFIRM_RUNS * per_run * RESERVE_MARGIN if self.settings.budget_s else 0.0
        return per_run

    @staticmethod
    def release(b: Budget) -> tuple[float, float]:
        """Free the confirmation from the budget, seconds and trials alike: its block always runs
        whole, whatever the search left and however many runs it takes (a stock run outside its band
        takes one more, to tell a one-off from a change: a `--trials 30` session once ended with "the
        budget ran out during the confirmation"); what it takes past the budget is said
        (Session.finish). Returns the seconds and the trials the whole budget had left for it, reserve
        included: what decides whether a runner-up fits, and whether the block may run again after
        a change of the machine."""
        room = b.seconds_left + b.reserve_seconds
        trials = b.trials_left + b.reserve_trials
        b.trials = b.seconds = None
        b.reserve_trials, b.reserve_seconds = 0, 0.0
        return room, trials

    def execute(self) -> dict:
        st, space = self.settings, self.space
        self.ev = ev = Evaluator(HplObjective(self), self.budget(), after=self.checkpoint, say=self.echo)

        self.echo(f"tuning session {self.run.id[:8]} (resume with: rmax tune --resume {self.run.id[:8]})")
        for line in self.explain_n():
            self.echo(line)
        self.echo(f"NB candidates {space.nb} from {space.nb_source}; "
                  f"grids {', '.join(f'{p}x{q}' for p, q in space.grid)}; engine {st.engine}, {space.ranks} ranks")
        self.same = not_searched(space)
        for line in self.same:
            self.echo(f"not searched, {line}")
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
            first = next((t for t in ev.history if t.m.ok), ev.history[-1])
            per_run = self.reserve(first, stock)
            self.memory = self.memory_run(first)
            if self.memory:
                m = self.memory
                self.echo(f"      the first full-N trial ran at {m['rate_gflops']:.2f} GFLOPS: a memory-sized run "
                          f"(N {m['n']}) would take about {_duration(m['seconds'])} at that rate (less: HPL runs "
                          "faster at a larger N)")
            self.echo(f"      held back for the confirmation at full N: {CONFIRM_RUNS} runs of about {per_run:.0f} s")
            reduced = space.sized(stock, False)["n"] != stock["n"]
            name = st.strategy
            kw = {}
            if name == "auto":
                per_trial = predicted_seconds(space.sized(stock, False)["n"], first.m.gflops if first.m.ok
                                              else self.facts["rate_guess_gflops"])
                kw["trials_hint"] = min(ev.budget.trials_left, ev.budget.seconds_left / per_trial)
            self.strategy = strategy = get_strategy(name)(space, ev, cap=st.cap, seed=st.seed, full=not reduced,
                                                          log=lambda msg: self.echo(f"      {msg}"), store=self.store,
                                                          **kw)
            inc = strategy.run()
            room, room_trials = self.release(ev.budget)
            self.confirmation = self.confirm(inc, stock, per_run, room, room_trials)
            if st.budget_s:
                self.overrun = max(0.0, ev.budget.used_seconds - st.budget_s)
            if st.trials:
                self.trial_overrun = max(0, ev.budget.used_trials - st.trials)
        except NodesLost as lost:
            self.run.update(summary={**self.run.record.summary, "lost_trials": lost.args[0]})
            self.run.finish("interrupted", f"{FAILED_STREAK} trials in a row failed (a lost node?)")
            raise RunFailed(f"{FAILED_STREAK} trials in a row failed (a lost node?): session {self.run.id[:8]} stopped",
                            hint=f"fix the nodes, then: rmax tune --resume {self.run.id[:8]}") from None
        return self.finish(strategy)

    def candidates(self, inc: dict | None, stock: dict) -> list[dict]:
        """The best candidates at full N: the search's last incumbent and the one it beat last
        (the runner-up), when they differ from the stock and never failed."""
        out: list[dict] = []
        kept = [d.challenger for d in self.ev.duels if d.verdict is not None and d.verdict.better]
        for c in ([inc] if inc else []) + kept[::-1][1:2]:
            full = self.space.sized(c, True)
            if key(full) != key(stock) and not self.ev.known_bad(full) and key(full) not in map(key, out):
                out.append(full)
        return out

    def confirm(self, inc: dict | None, stock: dict, per_run: float, room: float = math.inf,
                room_trials: float = math.inf) -> dict:
        """The confirmation at full N, always: the best candidates alternating with the stock in one
        block; the configuration chosen is the one whose paired interval over the stock is above 1
        (the highest ratio among them), else the stock."""
        ev = self.ev
        cands = self.candidates(inc, stock)
        runs = CONFIRM_RUNS + CONFIRM_PAIRS
        if len(cands) > 1 and (room_trials < runs or room < runs * per_run * RESERVE_MARGIN):
            cands = cands[:1]           # the runner-up only when its runs fit as well
        base = None if ev.known_bad(stock) else stock
        b, at = ev.budget, (ev.budget.used_trials, ev.budget.used_seconds)

        def fits(more: int, seconds: float) -> bool:     # within what the budget had left for the confirmation
            return (room_trials - (b.used_trials - at[0]) >= more
                    and room - (b.used_seconds - at[1]) >= seconds)

        verdicts, a, bs, note = confirm(ev, base, cands, CONFIRM_PAIRS, CONFIRM, fits)
        chosen, runs_of, ratio = stock, a, None
        for c, v, b in zip(cands, verdicts, bs):
            if base is None and b and (chosen is stock or len(b) > len(runs_of)):
                chosen, runs_of = c, b          # no stock to beat: the candidate measured
            elif v.better and (ratio is None or _strength(v) > _strength(ratio)):
                chosen, runs_of, ratio = c, b, v
        if not cands:
            note = note or "the search kept nothing over the stock: the stock alone at full N"
        return {"chosen": chosen, "runs": runs_of, "stock_runs": a, "ratio": ratio, "note": note,
                "candidates": [{"candidate": _plain(c), "code": variant_code(c), "ratio": v.ratio,
                                "interval": [v.lo, v.hi] if v.lo is not None else None, "pairs": v.samples,
                                "better": v.better, "runs": b}
                               for c, v, b in zip(cands, verdicts, bs)]}

    def unconfirmed(self, conf: dict) -> tuple[dict | None, dict | None, str]:
        """When the confirmation gave no figure: the stock's own runs at full N, else the search's
        last incumbent's runs (at full N, else at its N), said to be unconfirmed; else nothing."""
        ev, stock = self.ev, self.space.sized(self.space.stock(), True)
        why = f"not confirmed ({conf['note'] or 'no valid run in the confirmation'})"
        if ev.samples(stock):
            return stock, run_statistic(ev.samples(stock)), f"{why}: the stock's own runs at full N"
        inc = self.strategy.incumbent if self.strategy else None
        for c in ([self.space.sized(inc, True), inc] if inc else []):
            if ev.samples(c) and not ev.known_bad(c):
                return self.space.sized(c, True), run_statistic(ev.samples(c)), \
                    f"{why}: the search's best, from its runs at N {c['n']}"
        return None, None, why

    def best_bound(self, cand: dict) -> tuple[float | None, str]:
        """The DGEMM bound at the shape of the best's own trailing update (its N, NB and grid),
        measured now when no stored DGEMM has it; else the session's first bound."""
        from rmax.families.dgemm import hpl_update_shape
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
        conf = self.confirmation
        counts = {s: sum(t.m.status == s for t in ev.history) for s in ("ok", "invalid", "failed")}
        stock_stat = run_statistic(conf["stock_runs"])
        summary = {"trials": len(ev.history), "status_counts": counts, "retried_failures": ev.retried,
                   "strategy": strategy.name, "strategy_notes": strategy.notes, "noise_cv": noise_cv(ev),
                   "n": {"full": self.space.n_at(True), "search": self.space.n_at(False),
                         "source": self.space.n_source, "memory": self.space.n_memory,
                         "budget": self.space.n_budget, "memory_run": self.memory},
                   "not_searched": self.same,
                   "machine_changes": [c.to_dict() for c in ev.monitor.changes],
                   "start": {"gflops": stock_stat["median"] if stock_stat else None,
                             "statistic": stock_stat["text"] if stock_stat else None,
                             "first_gflops": start.m.gflops if start and start.m.ok else None,
                             "status": start.m.status if start else None,
                             "code": variant_code(start.cand) if start else None,
                             "n": start.cand["n"] if start else None},
                   "effects": paired_effects(ev.duels), "best": None,
                   "confirmation": {k: v for k, v in conf.items() if k not in ("chosen", "ratio")},
                   "steps": steps.build(ev, self.space.sized(self.space.stock(), True))}
        cand, stat, note = conf["chosen"], run_statistic(conf["runs"]), conf["note"]
        if self.overrun > 0:
            note = (note + "; " if note else "") + (f"the confirmation ran {self.overrun:.0f} s past the budget "
                                                    "(its runs took longer than the time held back for them)")
        if self.trial_overrun > 0:
            summary["trials_past_budget"] = self.trial_overrun
            note = (note + "; " if note else "") + (f"the confirmation ran {self.trial_overrun} trial(s) past --trials "
                                                    "(a stock run outside its band took one more to tell a one-off "
                                                    "from a change)")
        if stat is None:
            cand, stat, note = self.unconfirmed(conf)
            stock_full = self.space.sized(self.space.stock(), True)
            if not stock_stat and ev.samples(stock_full):
                s0 = run_statistic(ev.samples(stock_full))
                summary["start"].update(gflops=s0["median"], statistic=f"{s0['text']}, not in a confirmation block")
            if stat is None:
                self.run.update(summary=summary)
                self.run.finish("failed", "no valid trial: every trial failed or was invalid")
                raise RunFailed(f"tuning session {self.run.id[:8]}: no valid trial ({counts['invalid']} invalid, "
                                f"{counts['failed']} failed)", hint="see `rmax runs show " + self.run.id[:8] + "`")
        cfg = to_config(cand, st.threshold)
        path = Path(st.out)
        g = stat["median"]
        write_atomic(path, render(cfg, title=f"HPL.dat tuned by rmax (session {self.run.id[:8]}): {g:.3f} GFLOPS"),
                     "the tuned HPL.dat")
        rp = self.facts.get("rpeak_gflops")
        bound, bound_source = self.best_bound(cand)
        v = conf["ratio"]
        summary["best"] = {"gflops": g, "statistic": stat["text"], "interval": stat["interval"], "runs": stat["n"],
                           "n": cand["n"], "note": note,
                           "significant": bool(v is not None and v.better),
                           "gain_pct": 100 * (v.ratio - 1) if v is not None and v.ratio is not None else (
                               0.0 if v is None and key(cand) == key(self.space.sized(self.space.stock(), True))
                               and stat else None),
                           "gain_interval_pct": [100 * (v.lo - 1), 100 * (v.hi - 1)] if v is not None and v.lo is not None
                           else None,
                           "p_value": v.p_value if v is not None else math.nan,
                           "nb": cand["nb"], "grid": list(cand["grid"]), "code": variant_code(cand),
                           "candidate": _plain(cand), "hpl_dat": str(path.resolve()),
                           "pct_rpeak": 100 * g / rp if rp else None,
                           "pct_dgemm_bound": 100 * g / bound if bound else None}
        summary["rpeak_gflops"], summary["rpeak_basis"] = rp, self.facts.get("rpeak_basis")
        summary["dgemm_bound_gflops"], summary["dgemm_source"] = bound, bound_source
        self.run.update(summary=summary)
        self.run.finish("ok")
        return summary


def not_searched(space: Space) -> list[str]:
    """One line per grid and parameter whose values run alike there (rmax.tune.equivalence)."""
    from rmax.tune.equivalence import STOCK, coinciding

    lines = []
    for grid, param, groups, why in coinciding(space.grid, {p: space.values(p) for p in PARAMS}, space.engine):
        probe = {**STOCK, "grid": grid}
        shown = "; ".join(" = ".join(describe({**probe, param: v}, param) for v in grp) for grp in groups)
        lines.append(f"{grid_text(grid)}: {param} {shown}, searched as one: {why}")
    return lines


def _plain(cand: dict) -> dict:
    return {**cand, "grid": list(cand["grid"])}


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _strength(v) -> tuple[bool, float]:
    """How a confirmation's win ranks: a measured ratio, the larger the better, above a win by
    default (the stock's own run failed), which has none."""
    return v.ratio is not None, v.ratio or 0.0


def run_statistic(runs: list[float]) -> dict | None:
    """The median of runs of one configuration in one block, with the 95 % interval where one more
    run of it should land (a t prediction interval on the log rates, as the rates are ratios)."""
    x = [g for g in runs if g and g > 0]
    if not x:
        return None
    from rmax.stats import summarize, t_quantile

    med = summarize(x).median
    k = len(x)
    if k < 2:
        return {"median": med, "interval": None, "n": k, "text": "1 run: no interval"}
    logs = [math.log(g) for g in x]
    m = sum(logs) / k
    sd = math.sqrt(sum((v - m) ** 2 for v in logs) / (k - 1))
    half = t_quantile(0.975, k - 1) * sd * math.sqrt(1 + 1 / k)
    lo, hi = math.exp(m - half), math.exp(m + half)
    return {"median": med, "interval": [lo, hi], "n": k,
            "text": f"median of {k} runs at full N; one more run lands in [{lo:.3f}, {hi:.3f}] (95%)"}
