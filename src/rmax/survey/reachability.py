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


def check(ctx: SurveyContext, stage: str) -> dict:
    """Ask every node not yet lost; record the ones that do not answer as lost in `stage`. Returns
    the check as the survey's summary keeps it: stage, nodes asked, seconds, the unanswered ones."""
    hosts = [h.name for h in ctx.nodes]
    t0 = time.monotonic()
    gone: dict[str, str] = {}
    if len(hosts) > 1:
        gone = unanswered(hosts, ctx.launcher, run_job, via=hosts[0])
        if len(hosts) > 2 and set(gone) == set(hosts[1:]):
            # none answered from the first node: that one may be the node cut off, asked from the next
            again = unanswered(hosts, ctx.launcher, run_job, via=hosts[1])
            if len(again) < len(gone):
                gone = {**again, hosts[0]: again.get(hosts[0]) or f"reached none of the other {len(hosts) - 1} nodes"}
        for h, why in gone.items():
            ctx.lose(h, stage, why)
    return {"stage": stage, "nodes": len(hosts), "seconds": round(time.monotonic() - t0, 1),
            "unanswered": sorted(gone)}
