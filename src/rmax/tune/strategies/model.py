"""Model-guided: rank every NB x grid pair by the HPL time model
(rmax.model.hpl_model, HPL's scalability analysis plus its calibrated
panel term) and run only the most promising; then one coordinate pass over the
variant knobs the model cannot see (PFACT, BCAST, DEPTH, ...).

Inputs: alpha and beta from the latest stored `net` run, gamma3 from the
latest `dgemm` run (rmax.model.inputs). When one is missing: gamma3 is taken
from the first measured trial (every flop charged at its rate, an upper bound
on the time per flop), alpha and beta are assumed shared-memory values; the
strategy says which in its notes. The model's overhead term (its form and
coefficient) is refitted from this session's own trials after each one, so the
ranking learns the machine."""

from __future__ import annotations

from rmax.errors import RmaxError
from rmax.tune.noise import challenge
from rmax.tune.space import PARAMS
from rmax.tune.strategies.base import Strategy, register
from rmax.tune.strategies.coordinate import descend

ASSUMED_ALPHA = 2e-6      # s per message: shared-memory MPI on one node
ASSUMED_BETA = 5e9        # bytes/s


@register
class ModelGuided(Strategy):
    name = "model"
    summary = "rank NB x grid by the HPL time model, run the most promising, then tune the variants"

    def rates(self) -> tuple[float, float, float | None]:
        alpha = beta = gamma3 = None
        if self.store is not None:
            from rmax.model.inputs import gamma3_from_store, network_from_store

            try:
                a, b = network_from_store(self.store)
                alpha, beta = a.value, b.value
                self.notes.append(f"alpha, beta from {a.source}")
            except RmaxError:
                pass
            try:
                # At the shape of HPL's trailing update for the start's NB and grid at the search's N.
                g = gamma3_from_store(self.store, self.start["nb"], n=self.space.n_at(self.full),
                                      grid=tuple(self.start["grid"]))
                gamma3 = g.value
                self.notes.append(f"gamma3 from {g.source}")
            except RmaxError:
                pass
        if alpha is None:
            alpha, beta = ASSUMED_ALPHA, ASSUMED_BETA
            self.notes.append(f"alpha, beta assumed ({ASSUMED_ALPHA * 1e6:.0f} us, {ASSUMED_BETA / 1e9:.0f} GB/s): no net run stored")
        return alpha, beta, gamma3

    def predict(self, cand: dict, alpha: float, beta: float, gamma3: float, overhead) -> float:
        from rmax.model.hpl_model import predict_hpl

        p, q = cand["grid"]
        return predict_hpl(cand["n"], cand["nb"], p, q, alpha, beta, gamma3, overhead)

    def fit_overhead(self, alpha, beta, gamma3):
        from rmax.model.hpl_model import REFERENCE, Observation, calibrate, hpl_flops

        obs = [Observation(t.cand["n"], t.cand["nb"], *t.cand["grid"], hpl_flops(t.cand["n"]) / (t.m.gflops * 1e9),
                           alpha, beta, gamma3) for t in self.ev.history if t.m.ok]
        return calibrate(obs).overhead if obs else REFERENCE

    def search(self) -> None:
        alpha, beta, gamma3 = self.rates()
        start = self.measure_start()
        if start is None:
            return
        if gamma3 is None:
            p, q = start["grid"]
            gamma3 = 1e-9 / (self.ev.mean(start) / (p * q))
            self.notes.append(f"gamma3 from the first trial ({1e-9 / gamma3:.2f} GFLOPS per process): no dgemm run stored")
        pairs = [(nb, g) for nb in self.space.nb for g in self.space.grid]
        # Run the model's favourites: at most a third of a trial budget (the variants need the rest), at least 3.
        left = self.ev.budget.trials_left
        quota = max(3, int(left // 3)) if left != float("inf") else max(3, len(pairs) // 2)
        tried = {(start["nb"], tuple(start["grid"]))}
        for _ in range(min(quota, len(pairs) - 1)):
            overhead = self.fit_overhead(alpha, beta, gamma3)
            ranked = sorted((c for c in (self.sized({**self.incumbent, "nb": nb, "grid": g}) for nb, g in pairs)
                             if (c["nb"], tuple(c["grid"])) not in tried),
                            key=lambda c: self.predict(c, alpha, beta, gamma3, overhead) / c["n"] ** 3)
            if not ranked:
                break
            cand = ranked[0]
            tried.add((cand["nb"], tuple(cand["grid"])))
            if self.ev.known_bad(cand):
                continue
            v = challenge(self.ev, cand, self.incumbent, self.cap)
            if v.better:
                self.incumbent = cand
        self.notes.append(f"model ranked {len(pairs)} NB x grid pairs, ran {len(tried)}; overhead term "
                          f"{self.fit_overhead(alpha, beta, gamma3).describe()}, fitted from this session's trials")
        descend(self, params=[p for p in PARAMS if p not in ("nb", "grid")])
