"""The steps of a survey, in order: the inventory, every benchmark family with a
survey plan (rmax.bench.family), HPL and the optional tuning session. A step
stores its own runs under the survey; a step that fails is recorded and the
survey goes on, so one broken benchmark never costs the others' results."""

from __future__ import annotations

import dataclasses
import math
from abc import ABC, abstractmethod

from rmax.errors import RmaxError
from rmax.launch import Host, LaunchSpec
from rmax.registry import Registry
from rmax.store.runs import RunRecord
from rmax.survey.context import SurveyContext

STEPS: Registry = Registry("survey steps")   # the steps that are not a benchmark family's: name -> class
register = STEPS.register


class Step(ABC):
    name: str
    title: str
    share: float = 0.05     # the part of the survey's budget it may use
    per_node: bool = False  # runs once on every node, all nodes at once (fanout.py)
    order: int = 50         # place in the survey (the families' plans share the scale)
    on_request: bool = False   # only in a survey whose --steps names it
    per_core: int = 0       # where nodes share a machine: at most this many ranks a core (plan.bounded_nodes; 0: none)

    @property
    def where(self) -> str:
        """Where it runs, as the survey's plan sizes it (plan.StepPlan.where)."""
        return "node" if self.per_node else "other"

    def bounded(self, ctx: SurveyContext, nodes: list[Host]) -> list[Host]:
        """The first of `nodes` only, where the plan bounds this step's ranks per core on a shared
        machine (StepPlan.nodes); all of them otherwise."""
        planned = ctx.plan.get(self.name) if ctx.plan else None
        return nodes[:planned.nodes] if planned and planned.nodes else nodes

    def skip_reason(self, ctx: SurveyContext) -> str | None:
        """Why this step does not apply here (None: it runs)."""
        return None

    def sizing(self, ctx: SurveyContext) -> str | None:
        """How the step sized itself from what the survey measured before it (None: by the plan alone)."""
        return None

    def facts(self, ctx: SurveyContext) -> dict:
        """What the step's entry keeps beside its runs for readers of the survey (rmax accept)."""
        return {}

    @abstractmethod
    def run(self, ctx: SurveyContext) -> list[RunRecord]:
        ...


@register
class Inventory(Step):
    name, title = "inventory", "node inventory and Rpeak"
    per_node, order = True, 10

    def run(self, ctx):
        from rmax.inventory import collect, fingerprint
        from rmax.survey.fanout import inventory_on_every_node

        # The FMA peak is measured once: by the peakflops step when the survey has one (its stored
        # summary then carries the peak basis), else here.
        measure = "peakflops" not in ctx.steps
        unmeasured = "not measured here: the survey's peakflops step measures the FMA peak"
        if ctx.hosts:
            records = inventory_on_every_node(ctx, measure, unmeasured, then=per_node_follows(ctx))
        else:
            with ctx.store.start_run("info", parent=ctx.survey_id, hosts=[ctx.nodes[0].name]) as run:
                inv = collect(measure=measure, unmeasured=unmeasured)
                run.update(summary=inv, fingerprint=fingerprint(inv))
            records = [ctx.store.get(run.id)]
        got = [r for r in records if r.status == "ok"]
        if not got:
            raise RmaxError("no node's inventory: " + "; ".join(r.error or r.status for r in records))
        ctx.facts["rpeak"] = got[0].summary.get("rpeak", {})
        ctx.facts["mem_available"] = min((r.summary.get("memory", {}).get("available_bytes") or 0) for r in got)
        ctx.facts["cores"] = min((r.summary.get("cpu", {}).get("threads") or 0) for r in got)   # the plan's crowding
        return records


class FamilyStep(Step):
    """A benchmark family's share of the survey, as its SurveyPlan says: one process on every node,
    all at once, or ranks over the first two nodes ("pair") or all nodes ("all")."""

    def __init__(self, family):
        plan = family.survey
        self.family, self.plan = family, plan
        self.name, self.title, self.share, self.order = family.name, plan.title, plan.share, plan.order
        self.per_node = plan.ranks == "node"
        self.on_request = plan.on_request
        self.per_core = plan.per_core
        self.node_group = None   # fanout.NodeSteps: this step launched with the next per-node ones

    @property
    def where(self):
        return self.plan.ranks

    def skip_reason(self, ctx):
        if not self.per_node and not ctx.multi_node and not self.between_ranks_here(ctx):
            return "one node: no network to measure"
        return None

    def default_options(self, ctx):
        """Its options before the plan sizes them (the family's, or what it measures between two ranks of one node)."""
        o = self.family.options(ctx.quick)
        return self.family.between_ranks_options(o) if self.between_ranks_here(ctx) else o

    def between_ranks_here(self, ctx) -> bool:
        """A pair step on one node of two slots or more runs between two ranks of it (shared memory):
        the latency and bandwidth `rmax model hpl` needs for this node's HPL."""
        return self.plan.ranks == "pair" and not ctx.multi_node and ctx.nodes[0].slots >= 2

    def options(self, ctx):
        """Its options in this survey: the planned sizes that fit its share of the budget, then HPL's shape."""
        o = self.default_options(ctx)
        planned = ctx.plan.get(self.name) if ctx.plan else None
        if planned:
            o = dataclasses.replace(o, **planned.sizes)
        o = self.family.survey_options(o, hpl_problem(ctx))
        if self.per_node:
            from rmax.survey.fanout import fit_shared_memory

            o = fit_shared_memory(o, ctx)
        return o

    def run(self, ctx):
        from rmax.bench.family import RunContext
        from rmax.families import run

        if self.per_node and ctx.hosts:   # on every node at once, with the next per-node steps
            return (self.node_group or start_node_group(ctx, [self])).records(self.name)
        o = self.options(ctx)
        timeout = ctx.step_timeout(self.name)
        base = RunContext(store=ctx.store, parent=ctx.survey_id, launcher=ctx.launcher, timeout=timeout,
                          quick=ctx.quick)
        if self.per_node:
            return [run(self.family, o, base)]
        if self.between_ranks_here(ctx):
            return [run(self.family, o, dataclasses.replace(base, spec=LaunchSpec(program=[], np=2)))]
        nodes = self.bounded(ctx, ctx.nodes[:2] if self.plan.ranks == "pair" else ctx.nodes)
        if self.plan.even:
            nodes = nodes[:len(nodes) - len(nodes) % 2]
        spec = LaunchSpec(program=[], np=len(nodes), hosts=[Host(h.name, 1) for h in nodes])
        return [run(self.family, o, dataclasses.replace(base, spec=spec))]


def node_seconds(step: Step) -> float | None:
    """A per-node step's seconds on its slowest node (NodeSteps.slowest), when it ran in a node group."""
    group = getattr(step, "node_group", None)
    return group.slowest(step.name) if group is not None else None


def node_group(steps: list[Step], ctx: SurveyContext) -> list["FamilyStep"]:
    """The consecutive per-node family steps that start `steps` (the survey's steps from here on):
    one launch runs them all. Their options are fixed at its start, so dgemm takes HPL's shape from
    the problem known then (the inventory's Rpeak), before peakflops measures the peak that HPL's N
    is sized from later: N moves by the cube root of the two peaks' ratio, and the DGEMM bound takes
    the measured shape nearest HPL's (DgemmSummary.at_shape), where DGEMM's rate no longer depends
    on m and n (families/dgemm.hpl_update_shape)."""
    group: list[FamilyStep] = []
    for s in steps:
        if not (isinstance(s, FamilyStep) and s.per_node) or s.skip_reason(ctx):
            break
        group.append(s)
    return group


def per_node_follows(ctx: SurveyContext) -> bool:
    """Whether the survey's steps after the inventory start with a node group (node_group)."""
    names = list(ctx.steps)
    after = names[names.index("inventory") + 1:] if "inventory" in names else []
    return bool(after) and bool(node_group(by_name(after[:1]), ctx))


def start_node_group(ctx: SurveyContext, group: list["FamilyStep"]):
    """Launch `group` on every node at once (fanout.NodeSteps); each step's run() then reads its part."""
    from rmax.survey.fanout import NodeStep, NodeSteps

    def turns(s) -> int:
        planned = ctx.plan.get(s.name) if ctx.plan else None
        return planned.turns if planned else 0

    launched = NodeSteps(ctx, [NodeStep(s.name, s.family, s.options(ctx), ctx.step_timeout(s.name), turns(s))
                               for s in group])
    for s in group:
        s.node_group = launched
    return launched


class PeakStep(FamilyStep):
    """peakflops, whose measured FMA peak completes its node's inventory: the survey measures the
    peak once, here, and the inventory's Rpeak (its FMA-unit count, the measured peak, the basis of
    % of peak) is derived from this run, naming it, so that every view of the survey agrees."""

    def run(self, ctx):
        from rmax.families import loaded
        from rmax.families.peakflops import derive_from_rows
        from rmax.inventory.load import busy_line
        from rmax.store.runs import Run

        records = super().run(ctx)
        infos = [r for r in ctx.store.children(ctx.survey_id) if r.kind == "info" and r.status == "ok"]
        for rec in records:
            got = loaded(rec) if rec.status == "ok" else None
            if not got or not got[1].results:
                continue
            for info in infos:
                if info.hosts == rec.hosts:
                    # a peak measured on a busy node is shown, and % of peak rests on the nominal Rpeak or on none
                    rp = {**derive_from_rows(info.summary.get("cpu") or {}, got[1].results, busy_line(rec.load)),
                          "measured_in": rec.id}
                    Run(ctx.store, info).update(summary={**info.summary, "rpeak": rp})
                    if info.hosts == [ctx.nodes[0].name]:
                        ctx.facts["rpeak"] = rp
        return records


class MatrixStep(FamilyStep):
    """The all-pairs matrix, and the switch layout inferred from it (a `topology` run of the survey):
    one of three answers, which the summary and the report carry. It measures nothing more: an
    undecided answer names its deciding command (`rmax topology infer --measure` runs it)."""

    def run(self, ctx):
        from rmax.errors import RmaxError
        from rmax.topology.inference_run import deciding_command, infer_from_store, store_inference

        records = super().run(ctx)
        for rec in list(records):
            if rec.status not in ("ok", "partial"):     # a matrix stopped at its share keeps its rounds
                continue
            try:
                source, later, hosts, result = infer_from_store(ctx.store, rec.id, {})
            except RmaxError:
                continue     # a matrix without host names or values: nothing to infer from
            command = None if result.decided else deciding_command(source, result.decide)
            records.append(store_inference(ctx.store, source, later, hosts, result, {}, command=command,
                                           parent=ctx.survey_id))
        return records


FAMILY_STEPS = {"peakflops": PeakStep, "matrix": MatrixStep}   # families whose survey step does more than run them


@register
class Hpl(Step):
    name, title, share, order, where = "hpl", "HPL at a sensible N", 0.3, 60, "hpl"

    @property
    def per_core(self) -> int:
        """HPL's ranks wait in MPI calls that poll, as HPC Challenge's kernels do: 64 virtual nodes on 2
        cores (32 ranks a core) stalled in 'solve' at N=192 for 213 s; their bound is HPL's too."""
        from rmax.bench.family import POLLING_RANKS_PER_CORE

        return POLLING_RANKS_PER_CORE

    def engine(self) -> str:
        from rmax.native import executable

        try:
            executable("rmax-hpl")
            return "rmax"
        except RmaxError:
            return "hpcc"

    def skip_reason(self, ctx):
        return "--tune replaces the single HPL run with a tuning session" if ctx.tune_budget else None

    def sizing(self, ctx) -> str | None:
        """How its N was chosen, in a line: the model's time for the seconds it had, and its inputs."""
        m = ctx.facts.get("hpl_model")
        if not m:
            return None
        src = m["from"]
        return (f"N={m['n']} by the HPL model for {m['seconds']:g} s (predicted {m['predicted_s']:g} s): "
                f"alpha {m['alpha'] * 1e6:.3g} us ({src.get('alpha')}), beta {m['beta'] / 1e6:.3g} MB/s "
                f"({src.get('beta')}), {1e-9 / m['gamma3']:.3g} GFLOPS a rank ({src.get('gamma3')})")

    def facts(self, ctx) -> dict:
        """The model's prediction for the N it ran (rmax accept sets HPL against it)."""
        m = ctx.facts.get("hpl_model")
        return {"model": m} if m else {}

    def problem(self, ctx, seconds: float | None = None) -> tuple[int, int, int, int]:
        """(N, NB, P, Q): the grid the nodes left give (grid_for), N the largest whose time by
        rmax's HPL model (model/hpl_model.py) is about `seconds` (default: a third of the step's
        planned seconds, the rest for its set-up and check), within 60% of memory. The model's
        inputs are this survey's own measurements once it has them (hpl_inputs): at many ranks
        HPL's time is the latency of its panel broadcasts and pivot exchanges, not its flops."""
        from rmax.model.hpl_model import predict_hpl

        nodes = self.bounded(ctx, ctx.nodes)
        p, q = grid_for(sum(h.slots for h in nodes))
        nb = 192
        planned = ctx.plan.get(self.name) if ctx.plan else None
        key = f"hpl_first_n_{seconds}"   # the N the first call chose for these seconds (below)
        seconds = seconds or max(2.0, (planned.seconds if planned else self.share * ctx.budget) / 3)
        gamma3, alpha, beta = hpl_inputs(ctx)
        mem = ctx.facts.get("mem_available") or 0
        top = math.inf
        if mem:   # nodes that share a machine (a virtual cluster's) share its memory
            top = math.sqrt(0.6 * mem * len(nodes) / ctx.facts.get("sharing", 1) / 8)
        # N a multiple of NB x lcm(P, Q) (every rank the same blocks) where that is small, else of NB
        unit = nb * math.lcm(p, q) if math.lcm(p, q) <= 12 else nb

        def fits(n: int) -> bool:
            return n <= top and predict_hpl(n, nb, p, q, alpha, beta, gamma3) <= seconds

        if not fits(unit):   # latency-bound (many ranks on crowded cores): every rank the same blocks costs too much
            unit = nb
        n = unit
        while fits(2 * n):   # a doubling, then the bisection between n and 2n
            n *= 2
        lo, hi = n, 2 * n
        while hi - lo > unit:
            mid = (lo + hi) // 2 // unit * unit
            lo, hi = (mid, hi) if fits(mid) else (lo, mid)
        # Never above the N of the first call, made before the per-node steps ran (from the
        # inventory): the DGEMM step measured that N's trailing-update shape, which the DGEMM bound
        # reads (a later, measured DGEMM rate can only raise N; latency measured later lowers it).
        first = ctx.facts.setdefault(key, {}).setdefault((p, q), lo)
        lo = max(unit, min(lo, first) // unit * unit)
        # its interval: the slowest and the fastest node's DGEMM rate (alpha and beta as measured)
        g_fast, g_slow = ctx.facts.get("hpl_gamma3_range") or (gamma3, gamma3)
        ctx.facts["hpl_model"] = {"n": lo, "nb": nb, "p": p, "q": q, "seconds": round(seconds, 2), "predicted_s": round(
            predict_hpl(lo, nb, p, q, alpha, beta, gamma3), 3), "predicted_range_s": [
            round(predict_hpl(lo, nb, p, q, alpha, beta, g), 3) for g in (g_fast, g_slow)],
            "gamma3": gamma3, "alpha": alpha, "beta": beta, "from": ctx.facts.get("hpl_inputs_from", {})}
        return lo, nb, p, q

    def run(self, ctx):
        from rmax.bench.family import RunContext
        from rmax.families import run
        from rmax.families.hpl import HPL
        from rmax.hpl.dat import HplConfig

        n, nb, p, q = self.problem(ctx)
        o = HPL.options(config=HplConfig(ns=[n], nbs=[nb], grids=[(p, q)]), engine=self.engine())
        shown = (lambda pr: ctx.on_progress(self.name, pr.short())) if ctx.on_progress else None
        rec = run(HPL, o, RunContext(store=ctx.store, parent=ctx.survey_id, spec=LaunchSpec(program=[], np=p * q,
                  hosts=self.bounded(ctx, ctx.nodes) if ctx.hosts else None), launcher=ctx.launcher,
                  timeout=ctx.step_timeout(self.name), quick=ctx.quick,
                  on_progress=shown))
        return [rec, *ctx.store.children(rec.id)]


@register
class Tune(Step):
    name, title, order = "tune", "HPL tuning session (--tune)", 70

    def skip_reason(self, ctx):
        return None if ctx.tune_budget else "no --tune budget given"

    def run(self, ctx):
        from pathlib import Path

        from rmax.tune.session import Session
        from rmax.tune.settings import Settings

        hpl = Hpl()
        n = hpl_problem(ctx)[0]
        hosts = ",".join(f"{h.name}:{h.slots}" for h in ctx.nodes) if ctx.hosts else None
        out = Path(ctx.out_dir or ".") / "HPL-tuned.dat"
        out.parent.mkdir(parents=True, exist_ok=True)
        settings = Settings(engine=hpl.engine(), np=ctx.ranks, hosts=hosts, launcher=ctx.launcher,
                            budget_s=ctx.tune_budget, n=n, out=str(out))
        session = Session.create(ctx.store, settings, echo=lambda line: None)
        session.run.update(parent=ctx.survey_id)
        if ctx.on_progress:
            session.on_progress = lambda pr: ctx.on_progress(self.name, pr.short())
        with session.run:
            session.execute()
        return [ctx.store.get(session.run.id)]


def grid_for(ranks: int) -> tuple[int, int]:
    """HPL's P x Q for `ranks` (P <= Q, Q at most 4 P, as HPL's tuning notes advise near-square
    grids): the most ranks such a grid uses, the squarer of equals; a rank count whose only exact
    grid is a line (47 nodes left of 48: 1 x 47) leaves a few ranks out (5 x 9)."""
    best = (1, 1)
    for p in range(1, math.isqrt(ranks) + 1):
        q = min(ranks // p, 4 * p)
        if p * q > best[0] * best[1] or (p * q == best[0] * best[1] and q - p < best[1] - best[0]):
            best = (p, q)
    return best


LINK_FLOOR_S = 1e-5    # s per message where nothing is measured yet: a fast network's (HPL's own sizing)


HPL_INPUT_STEPS = ("dgemm", "net", "ring")    # the steps whose runs HPL's model reads (hpl_inputs)


def hpl_inputs(ctx) -> tuple[float, float, float]:
    """(gamma3, alpha, beta) for HPL's model: seconds per DGEMM flop of one rank (the median node of
    this survey's DGEMM step, else 60 % of the inventory's Rpeak), seconds per message (the median
    ring latency among all ranks, else the point-to-point fit, else LINK_FLOOR_S) and bytes/s (the
    ring's bandwidth, else the point-to-point fit's, else 1 GB/s); what each came from goes in
    ctx.facts["hpl_inputs_from"]."""
    from rmax.families import loaded

    # a ring stopped in a random ring (partial) still measured the natural one among every rank
    runs = [r for r in ctx.store.children(ctx.survey_id)
            if (r.status == "ok" or (r.kind == "ring" and r.status == "partial")) and r.kind in HPL_INPUT_STEPS]
    got = {}
    rates = []
    for r in runs:
        typed = loaded(r)
        if typed is None:
            continue
        s = typed[1]
        if r.kind == "dgemm":
            point = max((p for p in [*s.shape, *s.square] if p.median > 0), key=lambda p: (p.k >= 128, p.m * p.n),
                        default=None)
            if point:   # per rank: a DGEMM of T threads stands for T one-thread ranks
                rates.append(point.median / max(1, s.threads or 1))
        elif r.kind == "ring" and (s.natural_latency_median or s.natural_latency):
            got["alpha"] = (s.natural_latency_median or s.natural_latency, f"ring run {r.id[:8]}")
            if s.natural_bandwidth:
                got["beta"] = (s.natural_bandwidth, f"ring run {r.id[:8]}")
        elif r.kind == "net":
            from rmax.model.inputs import _hockney

            fit = _hockney(s)
            if fit:
                got.setdefault("alpha", (max(fit[0].alpha, 1e-7), f"net run {r.id[:8]}"))
                got.setdefault("beta", (fit[0].beta, f"net run {r.id[:8]}"))
    planned = ctx.plan.get("dgemm") if ctx.plan else None
    if rates and planned and planned.turns:
        # measured in turns, each node alone on its machine: HPL's ranks share it all at once
        ranks = ctx.facts.get("sharing", 1) * max(1, ctx.nodes[0].slots)
        rates = [r * min(1.0, (ctx.facts.get("cores") or ranks) / ranks) for r in rates]
    if rates:
        got["gamma3"] = (1e-9 / sorted(rates)[len(rates) // 2], f"median of {len(rates)} node(s)' DGEMM runs"
                         + (f", measured in turns and shared by {ranks} ranks on {ctx.facts.get('cores')} cores"
                            if planned and planned.turns else ""))
        ctx.facts["hpl_gamma3_range"] = (1e-9 / max(rates), 1e-9 / min(rates))
    else:
        rate = (ctx.facts.get("rpeak") or {}).get("gflops") or 10.0
        per_rank = 0.6 * rate / max(1, ctx.nodes[0].slots) / max(1, ctx.facts.get("sharing", 1))
        got["gamma3"] = (1e-9 / per_rank, "60 % of the inventory's Rpeak, over the ranks that share it")
    got.setdefault("alpha", (LINK_FLOOR_S, "not measured yet: a fast network's"))
    got.setdefault("beta", (1e9, "not measured yet: 1 GB/s"))
    ctx.facts["hpl_inputs_from"] = {k: v[1] for k, v in got.items()}
    return got["gamma3"][0], got["alpha"][0], got["beta"][0]


def hpl_problem(ctx) -> tuple[int, int, int, int]:
    """(N, NB, P, Q) of the survey's HPL: its HPL step's, or with --tune the tuning session's N at
    that step's NB and grid (the steps that measure at HPL's shape ask here, before HPL runs)."""
    if ctx.tune_budget:
        # Trials about a fortieth of the budget each: enough of them for the strategy to learn from.
        return Hpl().problem(ctx, seconds=max(2.0, ctx.tune_budget / 40))
    return Hpl().problem(ctx)


def all_steps() -> list[Step]:
    """Every step, in the survey's order."""
    from rmax.families import families

    steps = [cls() for cls in STEPS.values()] + [FAMILY_STEPS.get(f.name, FamilyStep)(f) for f in families().values()
                                        if f.survey]
    return sorted(steps, key=lambda s: s.order)


def by_name(names: list[str] | None) -> list[Step]:
    steps = all_steps()
    known = [s.name for s in steps]
    if names:
        unknown = [n for n in names if n not in known]
        if unknown:
            raise RmaxError(f"unknown survey step(s): {', '.join(unknown)}", hint=f"steps: {', '.join(known)}")
    return [s for s in steps if s.name in names] if names else [s for s in steps if not s.on_request]


