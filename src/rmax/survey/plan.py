"""The survey's plan, made before it measures (after the inventory, whose facts it reads): each
step's seconds, a share of the budget, and the options that bound its time, sized to those seconds.

Pure functions of the node count, the nodes that share one machine, the options and the budget:
the same options on the same cluster give the same plan (nothing here reads a clock or the load),
so two surveys measure the same things and can be compared.

- A per-node step runs on every node at once, so its seconds do not depend on the node count; its
  kernels get time budgets from them. Where nodes share one machine (a virtual cluster's), each
  node's fixed-size work (array and matrix sizes) is cut by the nodes sharing it, so that the
  step's time stays the same on 4 nodes as on 64.
- A network step's sizes shrink as the node count grows (per-pair time, sampled matrix design,
  fewer message sizes and links), so that it fits its share; it is never dropped.
- HPL's N is sized from its seconds later, from the measured rate (steps.Hpl.problem)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

MARGIN = 1.5           # a step's watchdog: its planned seconds times this ...
SLACK_S = 60.0         # ... plus this, plus the launch's own time:
LAUNCH_PER_NODE_S = 2.0   # starting ranks on every node (a virtual cluster's take ~1 s each on 2 cores)
MIN_POINT_S = 0.001    # the shortest per-point budget the kernels take


@dataclass(frozen=True)
class StepPlan:
    step: str
    where: str            # node (every node at once), pair, all (ranks over the nodes), hpl, other
    seconds: float        # its share of the budget
    sizes: dict = field(default_factory=dict)   # option name -> value: what bounds its time
    before: bool = False  # it ran before the plan (the inventory, whose facts the plan reads): its share only

    def timeout(self, nodes: int) -> float:
        """Its watchdog: the planned seconds with a margin, and the launch's time over `nodes`."""
        # fanout.py adds its own launch time to a per-node step's; a pair's job starts on two nodes
        ranks = 0 if self.where == "node" else min(2, nodes) if self.where == "pair" else nodes
        launch = LAUNCH_PER_NODE_S * ranks
        return round(self.seconds * MARGIN + SLACK_S + launch, 1)

    def as_dict(self, nodes: int) -> dict:
        return {"step": self.step, "where": self.where, "seconds": self.seconds,
                "timeout_s": None if self.before else self.timeout(nodes),
                "sizes": {k: list(v) if isinstance(v, tuple) else v for k, v in self.sizes.items()}}


@dataclass(frozen=True)
class Plan:
    budget: float
    nodes: int
    sharing: int
    quick: bool
    steps: tuple[StepPlan, ...]

    def get(self, name: str) -> StepPlan | None:
        return next((s for s in self.steps if s.step == name), None)

    def as_dict(self) -> dict:
        return {"budget_s": self.budget, "nodes": self.nodes, "sharing": self.sharing, "quick": self.quick,
                "steps": [s.as_dict(self.nodes) for s in self.steps]}

    def lines(self) -> list[str]:
        """The plan as a compact table: step, seconds, watchdog, key sizes."""
        head = (f"plan: {self.budget:g} s over {self.nodes} node(s)"
                + (f", {self.sharing} per machine" if self.sharing > 1 else ""))
        rows = [f"  {s.step:<10} {s.seconds:>6.1f} s, "
                + ("ran before the plan  " if s.before else f"stop at {s.timeout(self.nodes):g} s  ")
                + ", ".join(f"{k}={shown(v)}" for k, v in s.sizes.items()) for s in self.steps]
        return [head, *rows]


def shown(v) -> str:
    return ",".join(map(str, v)) if isinstance(v, tuple) else f"{v:g}" if isinstance(v, float) else str(v)


def seconds_of(steps: list[tuple[str, float]], budget: float) -> dict[str, float]:
    """Each step's seconds: its share of the budget, the shares scaled to sum to it."""
    total = sum(share for _, share in steps) or 1.0
    return {name: round(budget * share / total, 1) for name, share in steps}


def make_plan(steps: list[tuple[str, float, str]], defaults: dict, *, nodes: int, sharing: int, quick: bool,
              budget: float, net_budget: float = 0.0, done: tuple[str, ...] = ()) -> Plan:
    """The plan of `steps` ((name, share, where) of the steps that run, in order) over `nodes` nodes,
    `sharing` of them per machine, within `budget` seconds, and `net_budget` more for the network
    steps alone; defaults: each family step's default options
    (family.options(quick)), which its sizes replace; `done`: steps that ran before the plan."""
    secs = seconds_of([(n, share) for n, share, _ in steps], budget)
    extra = seconds_of([(n, share) for n, share, where in steps if where in ("pair", "all")], net_budget)
    secs = {n: round(v + extra.get(n, 0.0), 1) for n, v in secs.items()}
    planned = []
    for name, _, where in steps:
        sizer = SIZERS.get(name)
        sizes = sizer(defaults[name], secs[name], nodes, max(1, sharing), quick) if sizer and name in defaults else {}
        planned.append(StepPlan(name, where, secs[name], sizes, before=name in done))
    return Plan(budget + net_budget, nodes, max(1, sharing), quick, tuple(planned))


# -- sizing each family's options to its seconds:
#    (default options, seconds, nodes, nodes per machine, quick) -> the options changed

def per_point(seconds: float, points: int, part: float = 0.5) -> float:
    """A per-point budget: `part` of the seconds over the points (the rest: set-up, the minimum
    repetitions), never below what the kernels take."""
    return sig(max(MIN_POINT_S, part * seconds / max(1, points)))


def total(seconds: float, part: float = 0.7) -> float:
    """A whole-sweep budget: `part` of the seconds (the rest: start-up, the last point's overrun)."""
    return sig(max(0.01, part * seconds))


def sig(x: float) -> float:
    """x to 3 significant digits: a plan that reads well, and the same one from the same inputs."""
    return float(f"{x:.3g}")


def scaled_dim(d: int, sharing: int) -> int:
    """A matrix order for a node that has 1/sharing of a machine: the same time per call (n^3 work)."""
    return max(64, int(round(d / sharing ** (1 / 3) / 64)) * 64)


def stream(o, s, n, k, quick):
    out = {"budget": sig(min(o.budget, 0.2 * s))}
    if k > 1 and o.size:   # fixed work per repetition: cut by the nodes that share the machine
        out["size"] = max(2**20, o.size // k // 2**20 * 2**20)
    return out


def dgemm(o, s, n, k, quick):
    sizes = tuple(sorted({scaled_dim(d, k) for d in o.sizes}))
    ks = tuple(sorted({min(d, scaled_dim(d, k)) for d in o.k}))
    points = len(sizes) * (o.sweep in ("square", "both")) + len(ks) * (o.sweep in ("k", "both")) + 1
    return {"sizes": sizes, "k": ks, "mn": scaled_dim(o.mn, k), "budget": per_point(s, points)}


def budget_only(o, s, n, k, quick):
    return {"budget": total(s)}


def oslat(o, s, n, k, quick):
    """Its tests share its budget, but each measures a few batches at least, and a round trip on a
    machine that k nodes share waits for k-fold contended CPUs: past 4 nodes a machine, the first
    tests in lmbench's order (the cheap system calls first), fewer as k grows, so that the step's
    time does not grow with the nodes sharing it (a 64-node virtual cluster stopped in ctxsw)."""
    out = {"budget": total(s)}
    if k > 4:
        out["tests"] = o.tests[:max(3, math.ceil(len(o.tests) * 4 / k))]
    return out


def peakflops(o, s, n, k, quick):
    return {"budget": max(0.01, per_point(s, 16))}   # up to 4 ISAs x 2 precisions x 2 thread counts


def net(o, s, n, k, quick):
    # Its --layer-budget stays a safety bound (a layer cut there makes the run partial): the largest
    # message (a window of them in flight) and the points' own budget fit it to its share, the
    # largest message in proportion to the share of its own bound, down to 1 MiB (the bandwidth's
    # asymptote). NetPIPE's schedule: about 3 sizes per doubling.
    share = s / (len(o.layers) * o.repeats * o.layer_budget) if o.layer_budget else 1.0
    top = max(1 << 20, 1 << int(math.log2(max(1, o.max_size * min(1.0, share)))))
    out = {"max_size": min(o.max_size, top)} if not o.sizes else {}
    points = len(o.sizes) if o.sizes else 3 * max(1, math.ceil(math.log2(out["max_size"]))) * (3 if o.perturb else 1)
    return {**out, "budget": min(o.budget, per_point(s, len(o.layers) * o.repeats * points))}


def thinned(values: tuple, keep: int) -> tuple:
    """`keep` of the values, evenly spread, the first and the last kept."""
    if keep >= len(values):
        return values
    keep = max(2, keep)
    return tuple(values[round(i * (len(values) - 1) / (keep - 1))] for i in range(keep))


def coll(o, s, n, k, quick):
    procs = 1 + max(1, math.ceil(math.log2(max(2, n))))    # 2, 4, ..., all
    per_size = len(o.ops) * procs * len(o.orders)
    sizes = o.sizes
    while len(sizes) > 2 and 0.5 * s / (per_size * len(sizes)) < o.budget:   # fewer sizes before a shorter point
        sizes = thinned(o.sizes, len(sizes) - 1)
    return {"sizes": sizes, "budget": min(o.budget, per_point(s, per_size * len(sizes)))}


def ring(o, s, n, k, quick):
    links = o.links and 2 * n <= 0.5 * s / MIN_POINT_S / 10   # each link alone: 2 measurements per node
    rings = o.random_rings
    measured = 2 * (1 + rings) + (2 * n if links else 0)
    while rings > 1 and 0.5 * s / measured < MIN_POINT_S * 5:
        rings -= 1
        measured -= 2
    return {"random_rings": rings, "links": bool(links), "budget": min(o.budget, per_point(s, measured))}


def matrix(o, s, n, k, quick):
    from rmax.bench.matrix import auto_design

    design = o.design if o.design != "auto" else auto_design(n, quick)
    rounds = max(1, n - 1) if design == "full" else 2 * math.ceil(math.log2(max(2, n))) + 8
    return {"design": design, "budget": min(o.budget, per_point(s, 2 * rounds, 0.4)),
            "retest_budget": sig(min(o.retest_budget, max(1.0, 0.3 * s)))}


def mbw(o, s, n, k, quick):
    sizes = len(o.sizes) if o.sizes else 2 * max(1, math.ceil(math.log2(o.max_size)))   # 2^k and 3x2^(k-1)
    return {"budget": min(o.budget, per_point(s, sizes * o.repeats))}


SIZERS = {"stream": stream, "dgemm": dgemm, "oslat": oslat, "cpurate": budget_only, "memlat": budget_only,
          "memcopy": budget_only, "peakflops": peakflops, "net": net, "coll": coll, "ring": ring, "matrix": matrix,
          "mbw": mbw}
