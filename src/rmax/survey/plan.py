"""The survey's plan, made before it measures (after the inventory, whose facts it reads): each
step's seconds, a share of the budget, and the options that bound its time, sized to those seconds.

Pure functions of the node count, the nodes that share one machine, the options and the budget:
the same options on the same cluster give the same plan (nothing here reads a clock or the load),
so two surveys measure the same things and can be compared.

- A per-node step runs on every node at once, so its seconds do not depend on the node count; its
  kernels get time budgets from them. Where nodes share one machine (a virtual cluster's), each
  node's fixed-size work (array and matrix sizes) is cut by the nodes sharing it, so that the
  step's time stays the same on 4 nodes as on 64. Up to MAX_TURNS nodes a machine take turns
  instead (turns.py): one node at a time measures, alone on the machine as a real node is, for
  its share of the step's seconds, sized as a node of its own (where that work is fixed, STREAM's
  arrays, the step asks for its turns' least time: TURN_LEAST); a node slowed on purpose
  (vcluster's --cpu-quota) is then seen, where k nodes measuring at once on c cores each get c/k of
  a CPU.
- A network step's sizes shrink as the node count grows (per-pair time, sampled matrix design,
  fewer message sizes and links), so that it fits its share; it is never dropped. Where its ranks
  outnumber the cores of the machine behind them (a virtual cluster's nodes on one host), every
  measurement's fixed work costs in proportion to the ranks per core (`Crowd`, docs/SCALE.md):
  the points and the work per point are cut so that the planned seconds still hold.
- Three costs grow with the node count where the nodes share a machine, and the plan counts them in
  its total: an all-rank job's start on the shared cores (launch_seconds, taken from the step's
  seconds before its sizes are fitted), the inventory's reading of every node, and each node's
  fixed work in a per-node step measured at once (node_fixed_seconds, on top of its share).
- HPL's N is sized from its seconds later, by rmax's HPL model with what the survey measured by
  then (steps.Hpl.problem: the ring's latency and bandwidth among every rank, the DGEMM step's rate).
- The plan's total is its steps' seconds and the reachability checks' (check_seconds)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from rmax.hpl.hpcc_kernels import LOCAL_GUPS, MPI_GUPS
from rmax.launch.reach import IN_FLIGHT

MARGIN = 1.5           # a step's watchdog: its planned seconds times this ...
SLACK_S = 60.0         # ... plus this, plus the launch's own time:
LAUNCH_PER_NODE_S = 2.0   # starting ranks on every node (a virtual cluster's take ~1 s each on 2 cores)
MIN_POINT_S = 0.001    # the shortest per-point budget the kernels take
# Nodes of one machine take turns at a per-node step up to this many a machine (a turn gets the
# step's seconds over them): the quick survey's shortest per-node share, peakflops' 7.8 s, still
# gives each of 8 nodes about a second; more measure at once, crowded, with their work cut.
MAX_TURNS = 8


@dataclass(frozen=True)
class StepPlan:
    step: str
    where: str            # node (every node at once), pair, all (ranks over the nodes), hpl, other
    seconds: float        # its share of the budget
    sizes: dict = field(default_factory=dict)   # option name -> value: what bounds its time
    before: bool = False  # it ran before the plan (the inventory, whose facts the plan reads): its share only
    nodes: int = 0        # "all": the first this many nodes only (SurveyPlan.per_core); 0: every node
    turns: int = 0        # "node": the nodes of one machine measure one at a time, this many turns (turns.py)

    def timeout(self, nodes: int) -> float:
        """Its watchdog: the planned seconds with a margin, and the launch's time over `nodes`."""
        # fanout.py adds its own launch time to a per-node step's; a pair's job starts on two nodes
        ranks = 0 if self.where == "node" else min(2, nodes) if self.where == "pair" else self.nodes or nodes
        launch = LAUNCH_PER_NODE_S * ranks
        return round(self.seconds * MARGIN + SLACK_S + launch, 1)

    def as_dict(self, nodes: int) -> dict:
        return {"step": self.step, "where": self.where, "seconds": self.seconds,
                "timeout_s": None if self.before else self.timeout(nodes),
                **({"nodes": self.nodes} if self.nodes else {}), **({"turns": self.turns} if self.turns else {}),
                "sizes": {k: list(v) if isinstance(v, tuple) else v for k, v in self.sizes.items()}}


@dataclass(frozen=True)
class Plan:
    budget: float
    nodes: int
    sharing: int
    quick: bool
    steps: tuple[StepPlan, ...]
    checks_s: float = 0.0   # the reachability checks' seconds (check_seconds), on top of the steps'

    def get(self, name: str) -> StepPlan | None:
        return next((s for s in self.steps if s.step == name), None)

    @property
    def total(self) -> float:
        """What the survey is planned to take: its steps' seconds and the checks'."""
        return round(sum(s.seconds for s in self.steps) + self.checks_s, 1)

    def as_dict(self) -> dict:
        return {"budget_s": self.budget, "total_s": self.total, "checks_s": self.checks_s, "nodes": self.nodes,
                "sharing": self.sharing, "quick": self.quick, "steps": [s.as_dict(self.nodes) for s in self.steps]}

    def lines(self) -> list[str]:
        """The plan as a compact table: step, seconds, watchdog, key sizes."""
        head = (f"plan: {self.total:g} s over {self.nodes} node(s)"
                + (f", {self.sharing} per machine" if self.sharing > 1 else "")
                + (f" ({self.checks_s:g} s of it asking every node whether it answers)" if self.checks_s else ""))
        rows = [f"  {s.step:<10} {s.seconds:>6.1f} s, "
                + ("ran before the plan  " if s.before else f"stop at {s.timeout(self.nodes):g} s  ")
                + (f"on {s.nodes} of {self.nodes} nodes, " if s.nodes else "")
                + (f"in {s.turns} turns of {sig(s.seconds / s.turns):g} s, " if s.turns else "")
                + ", ".join(f"{k}={shown(v)}" for k, v in s.sizes.items()) for s in self.steps]
        return [head, *rows]


def shown(v) -> str:
    return ",".join(map(str, v)) if isinstance(v, tuple) else f"{v:g}" if isinstance(v, float) else str(v)


INVENTORY_CPU_S = 0.3   # CPU seconds of one node's inventory (24 and 64 virtual nodes on 2 cores: 2.6 and
                        # 9.5 s, 0.22-0.30 s a node a core; bench/RESULTS.md, issue 45)
CHECK_WAVE_S = 3.0   # one wave of a reachability check (launch/reach.IN_FLIGHT nodes at once): 48 virtual
                     # nodes on 2 cores, 3 waves, took 9.2 s at load 30 (bench/RESULTS.md, issue 45)


def check_seconds(nodes: int, checks: int = 2, in_flight: int = IN_FLIGHT) -> float:
    """The reachability checks' seconds (survey/reachability.py): before the first launch and before
    the first multi-node step, each asking `in_flight` nodes at once."""
    return 0.0 if nodes < 2 else checks * math.ceil(nodes / in_flight) * CHECK_WAVE_S


def seconds_of(steps: list[tuple[str, float]], budget: float) -> dict[str, float]:
    """Each step's seconds: its share of the budget, the shares scaled to sum to it."""
    total = sum(share for _, share in steps) or 1.0
    return {name: round(budget * share / total, 1) for name, share in steps}


def make_plan(steps: list[tuple[str, float, str]], defaults: dict, *, nodes: int, sharing: int, quick: bool,
              budget: float, net_budget: float = 0.0, done: tuple[str, ...] = (), cores: int = 0,
              per_core: dict[str, int] | None = None) -> Plan:
    """The plan of `steps` ((name, share, where) of the steps that run, in order) over `nodes` nodes,
    `sharing` of them per machine of `cores` CPUs (0: unknown), within `budget` seconds, and
    `net_budget` more for the network steps alone; defaults: each family step's default options
    (family.options(quick)), which its sizes replace; `done`: steps that ran before the plan;
    `per_core`: a step's bound on the ranks per core where nodes share a machine (SurveyPlan)."""
    secs = seconds_of([(n, share) for n, share, _ in steps], budget)
    extra = seconds_of([(n, share) for n, share, where in steps if where in ("pair", "all")], net_budget)
    secs = {n: round(v + extra.get(n, 0.0), 1) for n, v in secs.items()}
    crowd = Crowd(max(1, sharing), cores)
    if "inventory" in secs and crowd.sharing > 1 and crowd.cores:
        # every node reads itself at once, on the cores they share: the plan asks for that time
        secs["inventory"] = max(secs["inventory"], sig(INVENTORY_CPU_S * crowd.sharing / crowd.cores))
    planned = []
    for name, _, where in steps:
        sizer, net_sizer = SIZERS.get(name), NET_SIZERS.get(name)
        bound = bounded_nodes(nodes, crowd, (per_core or {}).get(name, 0)) if where in ("all", "hpl") else 0
        # a job whose ranks outnumber the cores of the machine they share starts them on those
        # cores first, in time that grows with them: the sizes fit what is left, and a share that
        # would leave under half of it to measure asks for more (the plan's total says so).
        # Elsewhere each node starts its own ranks, in about LAUNCH_S, which the sizers' slack holds.
        ranks = bound or nodes
        start = launch_seconds(ranks, crowd) if where in ("all", "hpl") and crowd.per_core(ranks) > 1 else 0.0
        if start:
            secs[name] = max(secs[name], sig(2 * start))
        left = max(0.5 * secs[name], secs[name] - start)
        turns = crowd.sharing if where == "node" and sizer and name not in done and crowd.sharing <= MAX_TURNS else 0
        turns = turns if turns > 1 else 0
        if turns and name in TURN_LEAST and name in defaults:
            # each turn its least time alone: a share that holds less asks for more (the total says so)
            secs[name] = max(secs[name], sig(turns * TURN_LEAST[name](defaults[name]) / 0.8))
            left = secs[name]
        elif where == "node" and not turns and name not in done:
            # nodes measuring at once on shared cores: each node's fixed work comes on top of the
            # share its sizes fit (the total says so)
            secs[name] = sig(secs[name] + node_fixed_seconds(name, crowd))
        sizes = {} if name not in defaults else \
            net_sizer(defaults[name], left, ranks, crowd, quick) if net_sizer else \
            sizer(defaults[name], left / turns, nodes, turns, quick, turns=True) if sizer and turns else \
            sizer(defaults[name], left, nodes, max(1, sharing), quick) if sizer else {}
        planned.append(StepPlan(name, where, secs[name], sizes, before=name in done, nodes=bound, turns=turns))
    return Plan(budget + net_budget, nodes, max(1, sharing), quick, tuple(planned), check_seconds(nodes))


LAUNCH_S = 1.0            # starting an MPI job's ranks, where each node starts its own
LAUNCH_RANK_CPU_S = 0.27  # CPU seconds a rank's start costs the machine it shares (64 virtual nodes on
                          # 2 cores: `rmax launch check --np 64` 8.4-8.6 s)


# A node's fixed CPU seconds in a per-node step, whatever its budgets: its kernel's start, its arrays'
# first touch and check, its threads' start. Measured as the slope of the step's slowest node against
# the node count, 24 to 128 virtual nodes on 2 cores, times the cores (bench/RESULTS.md, issue 45,
# session 29): STREAM 0.056 s a node, peakflops 0.039, memcopy and oslat 0.017, DGEMM 0.013.
NODE_FIXED_CPU_S = {"peakflops": 0.08, "cpurate": 0.02, "memlat": 0.015, "stream": 0.11, "dgemm": 0.03,
                    "memcopy": 0.035, "oslat": 0.035}


def node_fixed_seconds(step: str, crowd: "Crowd") -> float:
    """The seconds a per-node step's fixed work takes where `crowd.sharing` nodes measure at once on
    the machine's cores (0 on machines of their own, or of unknown cores)."""
    if crowd.sharing <= 1 or not crowd.cores:
        return 0.0
    return NODE_FIXED_CPU_S.get(step, 0.0) * crowd.sharing / crowd.cores


def launch_seconds(ranks: int, crowd: "Crowd") -> float:
    """Seconds to start a job of `ranks` ranks: a fixed part, plus on nodes that share a machine its
    ranks' start-up on that machine's cores."""
    shared = min(ranks, crowd.sharing) if crowd.sharing > 1 else 0
    return LAUNCH_S + LAUNCH_RANK_CPU_S * shared / max(1, crowd.cores)


def bounded_nodes(nodes: int, crowd: "Crowd", per_core: int) -> int:
    """The nodes an "all" step runs on where it bounds its ranks per core and the nodes share a
    machine with fewer cores than that allows them (0: every node). HPC Challenge's kernels wait in
    MPI calls that poll: 40 or 48 ranks polling on 2 cores over a virtual cluster's TCP links stopped
    making progress (PTRANS at n=1000 did not end in 200 s; 32 ranks took 6 s, 16 took 3 s)."""
    if not per_core or crowd.sharing <= 1 or nodes <= per_core * max(1, crowd.cores):
        return 0
    return max(2, per_core * max(1, crowd.cores))


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


STREAM_PASSES = 10       # arrays a STREAM repetition reads or writes: copy and scale 2, add and triad 3
MEMORY_FLOOR = 9e9       # bytes/s a quick STREAM moved on average over its one-thread and all-core runs on this
                         # project's 2-vCPU guest (128 MiB arrays: 2.9 s for 2 x 10 repetitions, a node alone)


def stream(o, s, n, k, quick, turns=False):
    out = {"budget": sig(min(o.budget, 0.2 * s))}
    if k > 1 and o.size and not turns:   # fixed work per repetition: cut by the nodes that share the machine
        out["size"] = max(2**20, o.size // k // 2**20 * 2**20)
    return out


def stream_turn(o) -> float:
    """A node's least seconds of STREAM alone: its repetitions (--ntimes a run) of its arrays at the
    floor rate. Its arrays stay a node's own in turns (far larger than the caches: a repetition cut
    to a few milliseconds fits in the gaps of a CPU quota, and L3 serves part of it)."""
    runs = 2 if o.mode == "both" else 1
    return runs * o.ntimes * STREAM_PASSES * (o.size or 0) / MEMORY_FLOOR


def dgemm(o, s, n, k, quick, turns=False):
    k = 1 if turns else k   # in turns a node has the machine: its repetitions fit the turn's seconds
    sizes = tuple(sorted({scaled_dim(d, k) for d in o.sizes}))
    ks = tuple(sorted({min(d, scaled_dim(d, k)) for d in o.k}))
    points = len(sizes) * (o.sweep in ("square", "both")) + len(ks) * (o.sweep in ("k", "both")) + 1
    return {"sizes": sizes, "k": ks, "mn": scaled_dim(o.mn, k), "budget": per_point(s, points)}


def budget_only(o, s, n, k, quick, turns=False):
    return {"budget": total(s)}


def oslat(o, s, n, k, quick, turns=False):
    """Its tests share its budget, but each measures a few batches at least, and a round trip on a
    machine that k nodes share waits for k-fold contended CPUs: past 4 nodes a machine, the first
    tests in lmbench's order (the cheap system calls first), fewer as k grows, so that the step's
    time does not grow with the nodes sharing it (a 64-node virtual cluster stopped in ctxsw)."""
    out = {"budget": total(s)}
    if k > 4 and not turns:
        out["tests"] = o.tests[:max(3, math.ceil(len(o.tests) * 4 / k))]
    return out


def peakflops(o, s, n, k, quick, turns=False):
    """Up to 4 ISAs x 2 precisions x 2 thread counts share its seconds. Where k nodes share one
    machine, one thread: the all-core row's threads start each block together from a spinning start
    line, and k nodes' threads on the same cores wait there for the scheduler, not for the FMA units
    (64 virtual nodes on 2 cores: 3-21 s a node, against 1.3-1.8 s on 4); the node's Rpeak is then
    its cores times one core's (inventory/rpeak.choose_basis). Past 4 nodes a machine, double precision
    alone (the peak basis and the FMA-unit count are double's) and shorter blocks: each block's
    fixed work waits k-fold for the cores (24 virtual nodes on 2 cores: 18 s a node for 2 planned,
    6 rows of 7 blocks of 20 ms at 1/12 of a core); a block of 2 ms is still 10^6 FMAs. In turns a
    node measures alone, as a node of its own."""
    out = {"budget": max(0.01, per_point(s, 16))}
    if turns:
        return out
    if k > 1:
        out["threads"] = 1
    if k > 4:
        out["precision"] = "double"
        out["sample_time"] = sig(max(0.002, o.sample_time * 4 / k))
    return out


# -- the network steps: what a measurement costs, and the sizers that fit them to their seconds

# Measured on this project's 2-vCPU guest, virtual clusters of 16 nodes on 4 switches (1 Gbit/s
# links, 100 Mbit/s trunks), 8 ranks per core (bench/RESULTS.md, "Network steps on crowded cores"):
SYNC_S = 1.5e-3        # a synchronised batch (the operation, the gather of its times, the decision's
                       # broadcast) per rank per core: a 16-rank barrier took 3-6 ms at 8 per core
CROWDED_RATE = 2.4e7   # bytes/s a rank moves, times the ranks per core: the all-pairs matrix's
                       # across-switch median was 3.0 MB/s per pair at 8 per core (same switch 13.6)
LINK_FLOOR = 1e8       # bytes/s of any link MPI runs over (100 MB/s), where ranks have cores of their own
CROWDED_SAMPLES = 3    # fewest samples of a crowded measurement (a median and a spread; no warm-up batch)
MIN_WINDOW_BYTES = 64 << 10   # a virtual link's tbf moves messages from 64 KiB up at its rate


@dataclass(frozen=True)
class Crowd:
    """The machine behind the ranks: `sharing` nodes on one machine of `cores` CPUs (0: unknown).

    Where the ranks of a step outnumber the cores (a virtual cluster's nodes share this host's),
    a measurement's fixed work costs in proportion to the ranks per core: each of its synchronised
    batches waits for every rank of the communicator to get a time slice, and its bytes go through
    the cores that copy them for every rank. On separate machines (sharing 1), or ranks that fit
    the cores, the ranks per core is 1 and the sizers leave the sizes as they were."""

    sharing: int
    cores: int

    def per_core(self, ranks: int) -> float:
        """Ranks per core for a job of `ranks` ranks, at least 1 (a machine of unknown cores: 1 core)."""
        if self.sharing <= 1:
            return 1.0
        return max(1.0, min(ranks, self.sharing) / max(1, self.cores))


def batches(samples: int) -> int:
    """Synchronised batches of one measurement (native/net/repeat.c): the untimed validation
    exchange, one calibration batch (an operation slower than its batch target: a crowded one),
    the warm-up (only with 5 samples or more) and the samples."""
    return 2 + (samples >= 5) + samples


def measurement_s(c: float, bytes_per_rank: float, samples: int, budget: float) -> float:
    """A crowded measurement's seconds: its batches' synchronisation and bytes, c ranks per core
    (c > 1), plus its timed budget."""
    return batches(samples) * (SYNC_S * c + bytes_per_rank * c / CROWDED_RATE) + budget


def crowded(o, c: float) -> dict:
    """The options every crowded network step gets: the fewest samples that still give a median."""
    return {"min_samples": min(o.min_samples, CROWDED_SAMPLES)} if c > 1 else {}


def schedule(top: int) -> list[int]:
    """NetPIPE's sizes 2^k and 3x2^(k-1) from 1 to `top` (native/net/schedule.c without the
    perturbations)."""
    out, v = [], 1
    while v <= top:
        out += [v] + ([3 * v // 2] if v >= 2 and 3 * v // 2 <= top else [])
        v *= 2
    return sorted(set(out))


def net(o, s, n, crowd, quick):
    # NetPIPE's schedule, about 3 sizes per doubling. A point costs its budget plus its batches (8,
    # or 5 when crowded): each a window of at most window_bytes (stream, bidirectional) or a round
    # trip, at the link floor (nodes sharing a machine: the crowded rate). Every layer of every repeat must fit 40 %
    # of the seconds: first fewer bytes in flight (down to 2 MiB, 1/50 s at 1 Gbit/s), then a
    # smaller largest message (down to 1 MiB: the bandwidth's asymptote and the headline figure),
    # then fewer bytes in flight still. The layer budget is a safety bound the plan never reaches
    # (a layer cut there makes the run partial).
    c = crowd.per_core(2)
    samples = min(o.min_samples, CROWDED_SAMPLES) if c > 1 else o.min_samples
    # nodes sharing a machine copy through its cores even when the pair fits them (a loaded host's
    # virtual 1 Gbit/s link delivered 30-80 MB/s): the crowded rate, not a real link's floor
    rate = CROWDED_RATE / c if crowd.sharing > 1 else LINK_FLOOR
    perturb = 3 if o.perturb and not o.sizes else 1
    # the largest message as before: in proportion to the share of its own default layer bound
    share = s / (len(o.layers) * o.repeats * o.layer_budget) if o.layer_budget else 1.0
    top = max(o.sizes) if o.sizes else max(1 << 20, 1 << int(math.log2(max(1, o.max_size * min(1.0, share)))))
    wbytes = o.window_bytes or o.window * top

    def layer_cost(layer: str, top: int, wbytes: int) -> float:
        window = layer in ("mpi-stream", "mpi-bidir")
        moved = [min(o.window * z, wbytes) if window else 2 * z for z in (o.sizes or schedule(top))
                 if layer != "udp" or z <= 1 << 16]
        return perturb * sum(batches(samples) * (SYNC_S * c * (c > 1) + m / rate) for m in moved)

    def all_layers(top: int, wbytes: int) -> float:
        return o.repeats * sum(layer_cost(x, top, wbytes) for x in o.layers)

    while all_layers(top, wbytes) > 0.4 * s:   # the rest: the points' budgets, links slower than the floor
        if wbytes > 2 << 20:
            wbytes //= 2
        elif not o.sizes and top > 1 << 20:
            top //= 2
        elif wbytes > top:
            wbytes = max(top, wbytes // 2)
        else:
            break
    out = {} if o.sizes else {"max_size": min(o.max_size, top)}
    if wbytes != o.window_bytes:
        out["window_bytes"] = wbytes
    points = perturb * len(o.sizes or schedule(top))
    out["budget"] = min(o.budget, per_point(max(0.0, s - all_layers(top, wbytes)), len(o.layers) * o.repeats * points,
                                            0.8))
    # Each layer of each repeat may use an equal part of the step's watchdog (its seconds with the
    # margin and slack): more than the plan gives the costliest layer, and all of them together
    # stop no later than the watchdog would.
    costliest = max(layer_cost(x, top, wbytes) for x in o.layers) + points * out["budget"]
    layers = len(o.layers) * o.repeats
    out["layer_budget"] = sig(max(1.5 * costliest, (MARGIN * s + SLACK_S) / layers))
    return {**out, **crowded(o, c)}


SWEEP_MARGIN = 1.2   # a sweep's budget over its seconds: stopped past it, a step keeps within 1.25x of its plan


def sweep(s: float) -> dict:
    """The kernel's bound on all its points (--sweep-budget): past it the points not yet measured are
    left out and the run is partial, so that a step the plan sized too large stops near its share."""
    return {"sweep_budget": sig(SWEEP_MARGIN * s)}


def thinned(values: tuple, keep: int) -> tuple:
    """`keep` of the values, evenly spread, the first and the last kept."""
    if keep >= len(values):
        return values
    keep = max(2, keep) if len(values) >= 2 else 1
    return tuple(values[round(i * (len(values) - 1) / (keep - 1))] for i in range(keep)) if keep > 1 else values[:1]


def coll_procs(n: int) -> tuple[int, ...]:
    """rmax-net coll's default process counts: 2, 4, ... below n, then n (goptest's)."""
    out, q = [], 2
    while q < n:
        out.append(q)
        q *= 2
    return (*out, n)


def coll(o, s, n, crowd, quick):
    procs = 1 + max(1, math.ceil(math.log2(max(2, n))))    # 2, 4, ..., all
    per_size = len(o.ops) * procs * len(o.orders)
    sizes = o.sizes
    while len(sizes) > 2 and 0.5 * s / (per_size * len(sizes)) < o.budget:   # fewer sizes before a shorter point
        sizes = thinned(o.sizes, len(sizes) - 1)
    c_all = crowd.per_core(n)
    if c_all <= 1:
        return {"sizes": sizes, "budget": min(o.budget, per_point(s, per_size * len(sizes))), **sweep(s)}
    # Crowded: each point's batches cost in proportion to its ranks per core, an alltoall's or an
    # allgather's bytes also to its process count. Cut the rank orders first (they differ only
    # with several ranks per node), then the largest size, then the process counts between 2 and
    # all, until the fixed work fits 70 % of the seconds.
    samples = min(o.min_samples, CROWDED_SAMPLES)
    orders, counts = o.orders, tuple(o.procs or coll_procs(n))

    def fixed(sizes, orders, counts) -> float:
        total = 0.0
        for p in counts:
            for op in o.ops:
                for z in (sizes if op != "barrier" else (0,)):
                    moved = p * z if op in ("alltoall", "allgather") else 2 * z
                    total += len(orders) * measurement_s(crowd.per_core(p), moved, samples, 0.0)
        return total

    while fixed(sizes, orders, counts) > 0.7 * s:
        if len(orders) > 1:
            orders = orders[:1]
        elif max(sizes) > 4096:
            top = max(sizes) // 2
            sizes = tuple(sorted({min(z, top) for z in sizes}))
        elif len(counts) > 2:
            counts = thinned(counts, len(counts) - 1)
        else:
            break
    points = sum(len(orders) * sum(len(sizes) if op != "barrier" else 1 for op in o.ops) for _ in counts)
    out = {"sizes": sizes, "budget": min(o.budget, per_point(max(0.0, s - fixed(sizes, orders, counts)), points, 0.8))}
    if orders != o.orders:
        out["orders"] = orders
    if counts != tuple(o.procs or coll_procs(n)):
        out["procs"] = counts
    return {**out, **crowded(o, c_all), **sweep(s)}


def ring(o, s, n, crowd, quick):
    links = o.links and 2 * n <= 0.5 * s / MIN_POINT_S / 10   # each link alone: 2 measurements per node
    rings = o.random_rings
    measured = 2 * (1 + rings) + (2 * n if links else 0)
    while rings > 1 and 0.5 * s / measured < MIN_POINT_S * 5:
        rings -= 1
        measured -= 2
    c = crowd.per_core(n)
    if c <= 1:
        return {"random_rings": rings, "links": bool(links), "budget": min(o.budget, per_point(s, measured)),
                **sweep(s)}
    # Crowded: a ring measurement is 2 sizes x 2 methods over every rank (each sends its message both
    # ways), a link's a pair's between two splits of the world. Cut the links, then the random
    # rings down to one, then the bandwidth message (to 64 KiB), until the fixed work fits 70 %.
    samples, bw = min(o.min_samples, CROWDED_SAMPLES), o.bw_size

    def fixed(rings, links, bw) -> float:
        per_ring = 2 * sum(measurement_s(c, 2 * z, samples, 0.0) for z in (o.lat_size, bw))
        per_link = sum(measurement_s(c, 2 * z, samples, 0.0) for z in (o.lat_size, bw))
        return (1 + rings) * per_ring + (n * per_link if links else 0)

    while fixed(rings, links, bw) > 0.7 * s:
        if links:
            links = False
        elif rings > 1:
            rings -= 1
        elif bw > MIN_WINDOW_BYTES:
            bw = max(MIN_WINDOW_BYTES, bw // 2)
        else:
            break
    measured = 4 * (1 + rings) + (2 * n if links else 0)
    out = {"random_rings": rings, "links": bool(links),
           "budget": min(o.budget, per_point(max(0.0, s - fixed(rings, links, bw)), measured, 0.8))}
    if bw != o.bw_size:
        out["bw_size"] = bw
    return {**out, **crowded(o, c), **sweep(s)}


def shifts_of(n: int, most: int = 0) -> tuple[int, ...]:
    """The sampled design's shifts over n ranks, as native/net/matrix_rounds.c makes them: 1 to 4,
    then growing by half up to n/2; at most `most` (0: all), spread with the first and last kept."""
    ks, v = [], 1
    while v <= n // 2:
        ks.append(v)
        v = v + 1 if v < 4 else v + (v + 1) // 2
    if n // 2 >= 1 and ks[-1] != n // 2:
        ks.append(n // 2)
    return thinned(tuple(ks), most) if most else tuple(ks)


def shift_rounds(n: int, most: int = 0) -> int:
    """Rounds of those shifts: a shift's cycles take 1 round (k = n/2), 2 (even) or 3 (odd)."""
    cycles = [n // math.gcd(n, k) for k in shifts_of(n, most)]
    return sum(1 if c == 2 else 3 if c % 2 else 2 for c in cycles)


INSIDE_GUESS = 16      # rounds for the pairs inside switches (switches of up to 16-17 nodes): the plan
                       # does not know the switches; the matrix learns them when it runs
ROUNDS_SHARE = 0.6     # of the matrix's seconds, its rounds' at most (the kernel's --rounds-budget): where
                       # the sizes cannot shrink to fit (64 virtual nodes on 2 cores: 118 s for 47 planned),
                       # the rounds stop at it, a shuffled sample of the design measured; the retests have 0.3
MIN_SHIFTS = 3         # nearest, middle and farthest shift: every two switches of a chain still meet


def matrix(o, s, n, crowd, quick):
    from rmax.families.matrix import auto_design, crowded_sizes

    design = o.design if o.design != "auto" else auto_design(n, quick)
    c = crowd.per_core(n)
    if c <= 1:
        rounds = max(1, n - 1) if design == "full" else 2 * math.ceil(math.log2(max(2, n))) + 8
        return {"design": design, "budget": min(o.budget, per_point(s, 2 * rounds, 0.4)),
                "retest_budget": sig(min(o.retest_budget, max(1.0, 0.3 * s))), "rounds_budget": sig(ROUNDS_SHARE * s)}
    # Crowded: all of a round's pairs at once would measure their share of the cores, not their links
    # (48 ranks on 2 cores: same-switch and across-switch pairs overlapped, 3.3 against 1.7 MB/s), so
    # at most two pairs a core measure at once, the round's other ranks asleep. A part-round is a
    # latency and two bandwidth measurements at those few ranks per core, and a split, three barriers
    # and a gather of the whole world. Cut the bandwidth message (to 64 KiB), then the sampled
    # design's shifts (to 3), until the rounds' fixed work fits 60 % of the seconds (the retests
    # have the rest's budget).
    start = crowded_sizes(o, c, crowd.cores)     # the family's own: pairs at once, message, samples
    samples, bw, shifts, at_once = start["min_samples"], start["bw_size"], o.shifts, start["pairs_at_once"]
    busy = max(1.0, 2 * at_once / max(1, crowd.cores))
    parts = math.ceil(max(1, n // 2) / at_once)

    def rounds(shifts) -> int:
        return max(1, n - 1 + n % 2) if design == "full" else min(n - 1, INSIDE_GUESS) + shift_rounds(n, shifts)

    def fixed(bw, shifts) -> float:
        per_part = measurement_s(busy, 2 * o.lat_size, samples, 0.0) + \
            2 * measurement_s(busy, o.window * bw, samples, 0.0) + 5 * SYNC_S * c
        return rounds(shifts) * parts * per_part

    while fixed(bw, shifts) > 0.6 * s:
        if bw > MIN_WINDOW_BYTES:
            bw = max(MIN_WINDOW_BYTES, bw // 2)
        elif design == "sampled" and (shifts == 0 or shifts > MIN_SHIFTS):
            shifts = max(MIN_SHIFTS, (shifts or len(shifts_of(n))) - 1)
        else:
            break
    out = {"design": design, "pairs_at_once": at_once,
           "budget": min(o.budget, per_point(max(0.0, 0.7 * s - fixed(bw, shifts)), 3 * rounds(shifts) * parts, 0.8)),
           "retest_budget": sig(min(o.retest_budget, max(1.0, 0.3 * s))), "rounds_budget": sig(ROUNDS_SHARE * s)}
    if bw != o.bw_size:
        out["bw_size"] = bw
    if shifts != o.shifts:
        out["shifts"] = shifts
    return {**out, **crowded(o, c)}


MBW_CROWDED = 1.5   # mbw's samples against measurement_s: every pair's window, then the slowest rank's
                    # time; 64 virtual nodes on 2 cores took 0.078 s a sample at 1 B (0.048 modelled)
                    # and 0.19 s at 64 KiB (0.135): 1.4-1.6x (bench/RESULTS.md, issue 45)


def mbw(o, s, n, crowd, quick):
    sizes = tuple(o.sizes) if o.sizes else tuple(schedule(o.max_size))
    c = crowd.per_core(n)
    if c <= 1:
        return {"budget": min(o.budget, per_point(s, 2 * max(1, math.ceil(math.log2(o.max_size))) * o.repeats
                                                  if not o.sizes else len(o.sizes) * o.repeats))}
    # Crowded: every rank of a pair moves its window of each size at once. Cut the repeats (to 2:
    # still a spread), then the bytes in flight (to 64 KiB), then the sizes (the smallest and the
    # largest kept, to 4), until the fixed work fits 70 %.
    samples, repeats, wbytes = min(o.min_samples, CROWDED_SAMPLES), o.repeats, o.window_bytes or (o.window << 30)

    def fixed(sizes, repeats, wbytes) -> float:
        return MBW_CROWDED * repeats * sum(measurement_s(c, min(o.window * z, wbytes), samples, 0.0) for z in sizes)

    while fixed(sizes, repeats, wbytes) > 0.7 * s:
        if repeats > 2:
            repeats -= 1
        elif wbytes > MIN_WINDOW_BYTES:
            wbytes = max(MIN_WINDOW_BYTES, wbytes // 2)
        elif len(sizes) > 4:
            sizes = thinned(sizes, len(sizes) - 1)
        else:
            break
    out = {"budget": min(o.budget, per_point(max(0.0, s - fixed(sizes, repeats, wbytes)), len(sizes) * repeats, 0.8)),
           "repeats": repeats, "window_bytes": wbytes}
    if sizes != (tuple(o.sizes) if o.sizes else tuple(schedule(o.max_size))):
        out["sizes"] = sizes
    return {**out, **crowded(o, c)}


# HPC Challenge's kernels over the nodes: their rates at the slowest measured here (hpl/hpcc_kernels:
# a busy 2-core node), a job's MPI rate growing with its ranks' cores, and the matrix rate the same
# floors as the network steps'.
HPCC_LOCAL_RATE = LOCAL_GUPS * 1e9     # updates/s of one rank's table
HPCC_MPI_RATE = MPI_GUPS * 1e9         # updates/s of the MPI table, per core the ranks have
CROWDED_GUPS_RATE = 2e5                # updates/s of the MPI table on a virtual cluster: 0.00024 GUP/s on
                                       # 4 nodes on 2 cores, load 12 (bench/RESULTS.md, issue 34)
ELEMENT_S = 1e-7                       # seconds to generate or check one matrix element (ptrans)


def pow2_floor(x: float, least: int) -> int:
    """The largest power of two <= x, but at least the smallest one >= least (RandomAccess's tables)."""
    return max(1 << (least - 1).bit_length(), 1 << max(1, int(x)).bit_length() - 1)


def gups(o, s, n, crowd, quick):
    """Star (every node's own table at once: a per-node figure, on separate machines the single form's
    number) and MPI (one table over the nodes): each form updates its table twice (the run and HPCC's
    check), 4 updates a word. The local table gets 30 % of the seconds, the MPI table 40 % (on nodes
    that share a machine, at the rate measured on a virtual cluster's TCP links)."""
    from rmax.families.gups import mpi_table

    c = crowd.per_core(n)
    rate = CROWDED_GUPS_RATE if crowd.sharing > 1 else HPCC_MPI_RATE * n
    local = pow2_floor(min(o.table_size, 0.3 * s * HPCC_LOCAL_RATE / (8 * c)), 1024)
    spread = pow2_floor(min(mpi_table(o, n), 0.4 * s * rate / 8), 1024 * n)
    return {"forms": ("star", "mpi"), "table_size": local, "mpi_table_size": spread}


def ptrans(o, s, n, crowd, quick):
    """Each repeat generates A and C, moves n^2 x 8 bytes over the nodes' links (at the link floor, or
    a crowded machine's rate) and checks C: n where the repeats fit 50 % of the seconds."""
    c = crowd.per_core(n)
    rate = n * (CROWDED_RATE / c if crowd.sharing > 1 else LINK_FLOOR)
    per_element = 8 / rate + 3 * ELEMENT_S * c / n
    order = int(math.sqrt(0.5 * s / o.repeats / per_element))
    order = max(o.nb, min(o.n, order // o.nb * o.nb))
    return {"n": order}


def fft(o, s, n, crowd, quick):
    """Each form plans two transforms, FFTW's search stopped at plan_seconds (10 % of the seconds
    each), and runs them with the check: a power of two whose ten transforms at 0.1 GFLOPS a core
    fit 20 % of the seconds."""
    c = crowd.per_core(n)
    points = o.n
    while points > 1024 and 10 * 5 * points * math.log2(points) * c / 1e8 > 0.2 * s:
        points //= 2
    return {"n": points, "mpi_n": 0, "plan_seconds": sig(max(0.1, min(o.plan_seconds or 0.1 * s, 0.1 * s / 2)))}


TURN_LEAST = {"stream": stream_turn}   # a node's least seconds alone, where its work is fixed (make_plan)
SIZERS = {"stream": stream, "dgemm": dgemm, "oslat": oslat, "cpurate": budget_only, "memlat": budget_only,
          "memcopy": budget_only, "peakflops": peakflops}
NET_SIZERS = {"net": net, "coll": coll, "ring": ring, "matrix": matrix, "mbw": mbw, "gups": gups, "ptrans": ptrans,
              "fft": fft}
