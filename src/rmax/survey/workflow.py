"""Running the survey's steps as one stored survey run, with every step's runs under it."""

from __future__ import annotations

import time
from typing import Callable

from rmax.errors import RmaxError
from rmax.launch import Host
from rmax.store import Store
from rmax.store.runs import RunRecord
from rmax.survey.context import SurveyContext
from rmax.survey.plan import Plan, make_plan
from rmax.survey.spread import node_spread
from rmax.survey.steps import FamilyStep, Step, node_group, node_seconds, start_node_group

DEFAULT_BUDGET, QUICK_BUDGET = 300.0, 60.0
# With several nodes and no --budget, the network steps get this much more: their launches
# alone take seconds a node (a 4-node virtual cluster's quick p2p step took over a minute).
NET_BUDGET, QUICK_NET_BUDGET = 900.0, 240.0
# What a step's entry in the survey summary may say: ok, skipped (it does not apply here: one node,
# no --tune), or one of MISSING: planned, and it did not run or finish (the survey is then partial).
MISSING = ("failed", "invalid", "interrupted", "partial")
RETRY_LEAST_S = 10.0   # a multi-node step that failed on a lost node runs again only with this much of
                       # its watchdog left: a launch over the nodes left, and some measuring


def default_budget(quick: bool) -> float:
    """The survey's budget when none is given: the per-node steps run on every node at once, so it
    does not grow with the node count."""
    return QUICK_BUDGET if quick else DEFAULT_BUDGET


def default_net_budget(quick: bool, nodes: int) -> float:
    """What the network steps get on top of the default budget: nothing on one node."""
    return 0.0 if nodes < 2 else QUICK_NET_BUDGET if quick else NET_BUDGET


def step_outcome(records: list[RunRecord]) -> tuple[str, str | None]:
    """A step's status and error from its runs: ok; partial when some of them (some nodes) did not
    end ok, naming them; else the first run's status and error."""
    bad = [r for r in records if r.status != "ok"]
    if not bad:
        return "ok", None
    if len(bad) == len(records):
        return bad[0].status, bad[0].error
    return "partial", f"{len(bad)} of {len(records)} runs not ok: " + "; ".join(
        f"{r.error or r.status}" for r in bad)


def missing_steps(entries: list[dict]) -> list[dict]:
    """The planned steps that did not run or finish: step, status and why."""
    return [{"step": e["step"], "status": e["status"], "why": e.get("error") or e["status"]}
            for e in entries if e["status"] in MISSING]


def partial_line(steps: list[dict]) -> str:
    """The first line of a partial survey's summary and report: which planned steps are missing, and why."""
    return "PARTIAL: planned steps missing: " + "; ".join(f"{m['step']} ({m['status']}: {m['why']})"
                                                          for m in missing_steps(steps))


def lost_line(lost: list[dict]) -> str:
    """The first line of the summary and report of a survey that lost nodes: which, where, and why."""
    return f"LOST {len(lost)} node(s), left out of every later step: " + "; ".join(
        f"{x['host']} (in {x['step']} at {x['at_s']:g} s: {x['why']})" for x in lost[:8]) + (
        f"; and {len(lost) - 8} more" if len(lost) > 8 else "")


def multi_node(step: Step, ctx: SurveyContext) -> bool:
    """Whether a step runs ranks over several nodes (not a per-node one)."""
    return not step.per_node and step.where in ("pair", "all", "hpl") and ctx.multi_node


def losses(e: RmaxError, ctx: SurveyContext, step: Step) -> list[str]:
    """The nodes a failed multi-node step lost: the hosts its watchdog found silent and unanswering
    (HostsLost), else those a reachability check now finds gone (a launch that could not start on
    a node that went down)."""
    from rmax.launch.job import HostsLost
    from rmax.survey.reachability import check

    before = set(ctx.lost)
    if isinstance(e, HostsLost) and e.hosts:
        for h in e.hosts:
            ctx.lose(h, step.name, str(e))
    else:
        ctx.checks.append(check(ctx, f"after {step.name} failed", step.name, after=f"it failed: {e}"))
    return sorted(set(ctx.lost) - before)


def release_waiting(ctx: SurveyContext) -> None:
    """Nodes still waiting in the inventory's launch for per-node steps that did not come to them
    (no node group next, or its start failed) end now, not at their timeout."""
    if ctx.waiting:
        ctx.waiting.release()
        ctx.waiting = None


def plan_steps(ctx: SurveyContext, steps: list[Step], net_budget: float = 0.0) -> Plan:
    """The survey's plan (plan.py) for the steps that apply here, from the node count, the nodes
    that share a machine and its cores (the inventory's findings) and the options; a tuning session
    has its own time."""
    planned = [s for s in steps if s.name != "tune" and not s.skip_reason(ctx)]
    defaults = {s.name: s.default_options(ctx) for s in planned if isinstance(s, FamilyStep)}
    return make_plan([(s.name, s.share, s.where) for s in planned], defaults, nodes=len(ctx.nodes),
                     sharing=ctx.facts.get("sharing", 1), cores=ctx.facts.get("cores", 0), quick=ctx.quick,
                     budget=ctx.budget - (ctx.tune_budget or 0), net_budget=net_budget, done=("inventory",),
                     per_core={s.name: s.per_core for s in planned if s.per_core})


def run_survey(store: Store, steps: list[Step], *, hosts: list[Host] | None = None, quick: bool = False,
               budget: float | None = None, launcher: str | None = None, timeout: float = 600.0,
               label: str | None = None, tune_budget: float | None = None, out_dir: str | None = None,
               on_step: Callable[[str, str, dict], None] | None = None, require_all: bool = False) -> RunRecord:
    """Run each step in order; a failed step is recorded and the next one runs. Every planned step
    runs (none is dropped for time); the survey is `partial` when one did not run or finish, and
    `failed` when none did.

    The plan (plan.py) is made before the first step after the inventory: each step's seconds and
    sizes, so that the whole fits the budget; a step gets its seconds (with a margin) as its
    watchdog, and one stopped there keeps what it measured and is partial.

    on_step(name, event, info) is told "start", "ok", "failed", "partial" or "skipped", "plan" with
    info {"lines": [...]} when the plan is made, "progress" with info {"text": ...} while a
    step that reports progress (HPL) runs, and "lost" with info {"host", "step", "why"} when a node
    is taken for lost.

    Nodes: every node is asked before the first launch and before the first multi-node step
    (reachability.py); a node that does not answer, or falls silent in a step (its heartbeat stops
    and it does not answer a launch), is recorded once and left out of every later step, which runs
    on the others (HPL's grid too); a multi-node step that failed on it runs once more without it.
    The survey is then partial (failed with `require_all`), naming the nodes first."""
    net_budget = 0.0 if budget else default_net_budget(quick, len(hosts or ()))
    budget = (budget or default_budget(quick)) + (tune_budget or 0)
    params = {"quick": quick, "budget_s": budget + net_budget, "tune_budget_s": tune_budget, "steps": [s.name for s in steps],
              "hosts": [f"{h.name}:{h.slots}" for h in hosts] if hosts else None, "launcher": launcher}
    with store.start_run("survey", params=params, hosts=[h.name for h in hosts] if hosts else [],
                         label=label) as survey:
        ctx = SurveyContext(store, survey.id, hosts, quick, budget, launcher, timeout, tune_budget=tune_budget,
                            out_dir=out_dir, steps=tuple(s.name for s in steps),
                            on_progress=(lambda name, text: on_step(name, "progress", {"text": text})) if on_step else None)
        report: list[dict] = []
        told: set[str] = set()

        def note(entry: dict | None = None) -> None:
            if entry:
                report.append(entry)
            for h, x in ctx.lost.items():   # each lost node said once, as soon as the step that found it ends
                if h not in told:
                    told.add(h)
                    on_step and on_step(x["step"], "lost", x)
            # progress is in the store as it happens
            survey.update(summary={"steps": report, **({"plan": ctx.plan.as_dict()} if ctx.plan else {}),
                                   **({"lost": list(ctx.lost.values())} if ctx.lost else {}), "checks": ctx.checks})

        from rmax.survey.reachability import check

        if ctx.multi_node:   # a node down from the start is left out before the first launch waits for it
            ctx.checks.append(check(ctx, "start"))
            note()
        multi_checked = False
        for i, step in enumerate(steps):
            if ctx.plan is None and step.name != "inventory":   # the inventory's facts size the plan
                ctx.plan = plan_steps(ctx, steps, net_budget)
                survey.update(summary={"steps": report, "plan": ctx.plan.as_dict()})
                on_step and on_step("plan", "plan", {"lines": ctx.plan.lines()})
            reason = step.skip_reason(ctx)
            if reason:
                note({"step": step.name, "title": step.title, "status": "skipped", "reason": reason})
                on_step and on_step(step.name, "skipped", {"reason": reason})
                continue
            if multi_node(step, ctx) and not multi_checked:
                release_waiting(ctx)
                multi_checked = True
                ctx.checks.append(check(ctx, f"before {step.name}"))
                note()
                if not ctx.multi_node:
                    reason = "one node left: no network to measure"
                    note({"step": step.name, "title": step.title, "status": "skipped", "reason": reason})
                    on_step and on_step(step.name, "skipped", {"reason": reason})
                    continue
            on_step and on_step(step.name, "start", {"title": step.title})
            t0 = time.monotonic()
            ctx.running = (step.name, t0)
            before = store.child_ids(survey.id)
            retried: dict | None = None
            try:
                if isinstance(step, FamilyStep) and step.per_node and ctx.hosts and step.node_group is None:
                    # this step and the per-node steps after it: one launch on every node (or the
                    # inventory's, where its nodes wait for them: fanout.Waiting)
                    start_node_group(ctx, node_group(steps[i:], ctx))
                release_waiting(ctx)
                try:
                    records = step.run(ctx)
                except RmaxError as e:
                    gone = losses(e, ctx, step) if multi_node(step, ctx) else []
                    if not gone or not ctx.multi_node:
                        raise
                    left = ctx.step_left(step.name)
                    if left < RETRY_LEAST_S:   # the plan's "stop at" holds for the retry too
                        raise RmaxError(f"{e}; not run again without {', '.join(gone)}: "
                                        f"{max(0.0, left):.0f} s left of the step's time") from e
                    # once more on the nodes left (HPL's grid chosen for them), the first try named
                    retried = {"error": str(e), "lost": gone, "runs": sorted(store.child_ids(survey.id) - before)}
                    note()
                    records = step.run(ctx)
            except RmaxError as e:
                # A job stopped at its time keeps what it measured (a partial run): the step is partial.
                kept = [r for r in store.children(survey.id) if r.id not in before and r.status == "partial"]
                status = "partial" if kept else "failed"
                note({"step": step.name, "title": step.title, "status": status, "error": str(e),
                      "seconds": time.monotonic() - t0, **({"runs": [r.id for r in kept]} if kept else {})})
                on_step and on_step(step.name, status, {"error": str(e)})
                continue
            finally:
                ctx.running = None
            status, error = step_outcome(records)
            on_nodes = node_seconds(step)
            entry = {"step": step.name, "title": step.title, "status": status, "runs": [r.id for r in records],
                     "seconds": time.monotonic() - t0, **({"retried": retried} if retried else {}),
                     **({"node_seconds": round(on_nodes, 3)} if on_nodes is not None else {}),
                     **({"sizing": sized} if (sized := step.sizing(ctx)) else {}), **step.facts(ctx)}
            if error:
                entry["error"] = error
            note(entry)
            on_step and on_step(step.name, entry["status"], entry)

        release_waiting(ctx)
        missing = missing_steps(report)
        lost = list(ctx.lost.values())
        summary = {"steps": report, "missing": missing, "nodes": [h.name for h in ctx.nodes], "ranks": ctx.ranks,
                   "spread": node_spread(store.children(survey.id), ctx.facts.get("sharing", 1)),
                   **({"plan": ctx.plan.as_dict()} if ctx.plan else {}), "lost": lost, "checks": ctx.checks}
        survey.update(summary=summary)
        if missing or lost:
            done = any(e["status"] in ("ok", "partial") for e in report)
            why = "; ".join([*([lost_line(lost)] if lost else []),
                             *(["steps missing: " + "; ".join(f"{m['step']} ({m['why']})" for m in missing)]
                               if missing else [])])
            survey.finish("partial" if done and not (lost and require_all) else "failed", why)
    return store.get(survey.id)
