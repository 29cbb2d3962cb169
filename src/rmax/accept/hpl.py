"""HPL against the HPL model's prediction for this cluster: in each survey, the GFLOPS of its HPL
step set against what rmax's HPL model (model/hpl_model.py) predicted for that N and grid from the
survey's own measurements (alpha and beta from its ring and net steps, gamma from its DGEMM step:
the survey's HPL step keeps the prediction in its entry). The model's interval is its time with the
fastest and with the slowest node's DGEMM rate (HPL waits for the slowest); HPL fails when it is
below the slowest end by more than the fleet's tolerance, with the surveys' spread as its noise.

One verdict for the cluster (CLUSTER), not for a node: HPL runs on all of them."""

from __future__ import annotations

import math
import statistics

from rmax.accept.references import Fleet
from rmax.accept.verdicts import CLUSTER, Verdict, judge_level, level_of
from rmax.store import Store
from rmax.store.runs import RunRecord
from rmax.survey.steps import HPL_INPUT_STEPS

METRIC = "hpl:gflops against the model"
STEPS = (*HPL_INPUT_STEPS, "hpl")    # HPL and the steps its model's inputs come from


def pairs(store: Store, surveys: list[RunRecord]) -> list[tuple[float, float, float, str, str]]:
    """Per survey whose HPL step ran ok with a prediction: (measured GFLOPS, predicted GFLOPS,
    predicted at the slowest node's rate, the HPL run's id, the survey's id)."""
    from rmax.families import loaded
    from rmax.model.hpl_model import hpl_flops

    out = []
    for sv in surveys:
        for e in sv.summary.get("steps") or []:
            m = e.get("model")
            if e.get("step") != "hpl" or e.get("status") != "ok" or not m or not m.get("predicted_s"):
                continue
            for rid in e.get("runs") or []:
                r = store.get(rid)
                got = loaded(r) if r.kind == "hpl" and r.status == "ok" else None
                test = next((t for t in got[1].tests if t.n == m["n"] and t.gflops > 0), None) if got else None
                if test is None:
                    continue
                flops = hpl_flops(m["n"]) / 1e9
                slow = max(m.get("predicted_range_s") or [m["predicted_s"]])
                out.append((test.gflops, flops / m["predicted_s"], flops / slow, r.id, sv.id))
                break
    return out


def verdicts(store: Store, surveys: list[RunRecord], fleet: Fleet) -> list[Verdict]:
    """The cluster's HPL verdict against the model (none when no survey ran HPL with a prediction)."""
    got = pairs(store, surveys)
    if not got:
        return []
    # per survey, the log ratio of measured to predicted: the level, its noise the spread over the surveys
    lv = level_of([math.log(g / p) for g, p, *_ in got], [], "HPL against the model")
    # the band's low edge: the slowest node's prediction, less the fleet's tolerance
    low = statistics.mean(math.log(s / p) for _, p, s, *_ in got) + math.log1p(fleet.lower)
    measured = math.exp(statistics.mean(math.log(g) for g, *_ in got))
    predicted = math.exp(statistics.mean(math.log(p) for _, p, *_ in got))
    runs = ", ".join(r[3][:8] for r in got)
    return [judge_level(CLUSTER, METRIC, "GFLOPS", "model", lv, low, math.inf, fleet.confidence, measured, predicted,
                        f"rmax's HPL model (HPL runs {runs})",
                        f"rmax's HPL model for these surveys' N and grid, {100 * math.expm1(low):+.1f}% at the "
                        f"slowest node's DGEMM rate and the tolerance")]
