"""Running the survey's steps as one stored survey run, with every step's runs under it."""

from __future__ import annotations

import time
from typing import Callable

from rmax.errors import RmaxError
from rmax.launch import Host
from rmax.store import Store
from rmax.store.runs import RunRecord
from rmax.survey.context import SurveyContext
from rmax.survey.spread import node_spread
from rmax.survey.steps import Step

DEFAULT_BUDGET, QUICK_BUDGET = 300.0, 60.0


def default_budget(steps: list[Step], nodes: int, quick: bool) -> float:
    """The one-node budget, plus the per-node steps' share of it again for every further node:
    those steps measure one node after the other, so their time grows with the node count."""
    base = QUICK_BUDGET if quick else DEFAULT_BUDGET
    return base * (1 + (nodes - 1) * sum(s.share for s in steps if s.per_node))


def run_survey(store: Store, steps: list[Step], *, hosts: list[Host] | None = None, quick: bool = False,
               budget: float | None = None, launcher: str | None = None, timeout: float = 600.0,
               label: str | None = None, tune_budget: float | None = None, out_dir: str | None = None,
               on_step: Callable[[str, str, dict], None] | None = None) -> RunRecord:
    """Run each step in order; a failed step is recorded and the next one runs.

    on_step(name, event, info) is told "start", "ok", "failed" or "skipped", and "progress" with
    info {"text": ...} while a step that reports progress (HPL) runs."""
    budget = (budget or default_budget(steps, len(hosts) if hosts else 1, quick)) + (tune_budget or 0)
    params = {"quick": quick, "budget_s": budget, "tune_budget_s": tune_budget, "steps": [s.name for s in steps],
              "hosts": [f"{h.name}:{h.slots}" for h in hosts] if hosts else None, "launcher": launcher}
    with store.start_run("survey", params=params, hosts=[h.name for h in hosts] if hosts else [],
                         label=label) as survey:
        ctx = SurveyContext(store, survey.id, hosts, quick, budget, launcher, timeout, tune_budget=tune_budget,
                            out_dir=out_dir, steps=tuple(s.name for s in steps),
                            on_progress=(lambda name, text: on_step(name, "progress", {"text": text})) if on_step else None)
        report: list[dict] = []

        def note(entry: dict) -> None:
            report.append(entry)
            survey.update(summary={"steps": report})  # progress is in the store as it happens

        for step in steps:
            reason = step.skip_reason(ctx)
            if reason is None and ctx.remaining() <= 0 and step.name != "inventory":
                reason = f"the survey's {budget:.0f} s budget was used up"
            if reason:
                note({"step": step.name, "title": step.title, "status": "skipped", "reason": reason})
                on_step and on_step(step.name, "skipped", {"reason": reason})
                continue
            on_step and on_step(step.name, "start", {"title": step.title})
            t0 = time.monotonic()
            try:
                records = step.run(ctx)
            except RmaxError as e:
                note({"step": step.name, "title": step.title, "status": "failed", "error": str(e),
                      "seconds": time.monotonic() - t0})
                on_step and on_step(step.name, "failed", {"error": str(e)})
                continue
            bad = [r for r in records if r.status != "ok"]
            entry = {"step": step.name, "title": step.title, "status": "ok" if not bad else bad[0].status,
                     "runs": [r.id for r in records], "seconds": time.monotonic() - t0}
            if bad:
                entry["error"] = bad[0].error
            note(entry)
            on_step and on_step(step.name, entry["status"], entry)

        summary = {"steps": report, "nodes": [h.name for h in ctx.nodes], "ranks": ctx.ranks,
                   "spread": node_spread(store.children(survey.id))}
        survey.update(summary=summary)
        failed = [e["step"] for e in report if e["status"] not in ("ok", "skipped")]
        if failed:
            survey.finish("failed", f"steps that did not complete: {', '.join(failed)}")
    return store.get(survey.id)
