"""The survey's reachability check: every node asked, through the survey's launcher, whether it
starts a program (launch/reach.py), before the first launch and before the first step over several
nodes; a node that does not answer is recorded lost there and left out of every later step, as
Slurm leaves out a down node. Each node is asked alone, a bounded number at once (one launch over
all of them would wait out its whole time for one dead node, and name none)."""

from __future__ import annotations

import time

from rmax.launch import run_job
from rmax.launch.reach import unanswered
from rmax.survey.context import SurveyContext


def check(ctx: SurveyContext, stage: str, step: str | None = None, after: str | None = None) -> dict:
    """Ask every node not yet lost; record the ones that do not answer as lost in `step` (default:
    the stage), `after` what (a step's failure) the check was made. Returns the check as the
    survey's summary keeps it: stage, nodes asked, seconds, the unanswered ones."""
    hosts = [h.name for h in ctx.nodes]
    t0 = time.monotonic()
    gone: dict[str, str] = {}
    if len(hosts) > 1:
        gone = unanswered(hosts, ctx.launcher, run_job, via=hosts[0])
        for h, why in gone.items():
            ctx.lose(h, step or stage, f"{why}, asked after {after}" if after else why)
    return {"stage": stage, "nodes": len(hosts), "seconds": round(time.monotonic() - t0, 1),
            "unanswered": sorted(gone)}
