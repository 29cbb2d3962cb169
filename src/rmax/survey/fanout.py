"""A survey's per-node steps on every node at once: one launch through the survey's launcher
(mpirun, srun, the virtual cluster) for the inventory, and one for each group of consecutive
per-node kernel steps (NodeSteps), one process per node (node_worker.py) that runs the group's
kernels one after the other, each node measuring itself. Each step's result comes back on stderr
in frames (frames.py) as soon as the node finishes it, and is stored as that node's own run under
the survey while the nodes go on with the next step. A node that fails, hangs or is lost in a step
is stored failed under its name for that step, and the others' results are kept; it still runs
the next step. So the per-node steps cost a launch per group, not per step: starting a daemon and
a worker on every node is what grows with the node count. Nodes on the surveying machine (a
virtual cluster's, whose daemons and workers share its cores with the nodes' measurements) wait in
the inventory's launch for the group that follows it (Waiting): one launch in all there."""

from __future__ import annotations

import dataclasses
import importlib
import sys
import threading
import time
from collections import Counter
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from rmax.launch import Host, LaunchSpec, prepare, run_job
from rmax.store.runs import Run, RunRecord
from rmax.survey.frames import MAGIC, Reassembly
from rmax.survey import node_worker
from rmax.survey.plan import LAUNCH_PER_NODE_S, SLACK_S

RELEASE_WAIT_S = 10.0   # released nodes see [] within node_worker.POLL_S; then the launcher's teardown


@dataclass
class NodeResult:
    host: str
    stdout: str = ""
    error: str | None = None      # None: the program ran on the node and exited 0
    seconds: float | None = None  # the program's own time there


def assign(results: dict[int, dict], broken: dict[int, str], hosts: list[str], missing: str) -> dict[str, NodeResult]:
    """Each host's result (results and broken by rank): the rank that names it (its host name, or its
    short name), else the rank at its place in the list (launchers place rank i on the i-th host of a
    one-slot list). A host no rank reported for gets `missing` as its error."""
    short = {h.split(".")[0]: h for h in hosts}
    out: dict[str, NodeResult] = {}

    def host_of(rank: int, said: str) -> str | None:
        for h in (said, short.get(said.split(".")[0]), hosts[rank] if 0 <= rank < len(hosts) else None):
            if h in hosts and h not in out:
                return h
        return None

    for rank in sorted(results):
        r = results[rank]
        host = host_of(rank, r.get("host", ""))
        if host is None:
            continue
        error = r.get("error") or (None if r.get("rc") == 0 else f"exited with status {r.get('rc')}")
        out[host] = NodeResult(host, r.get("stdout") or "", error, r.get("seconds"))
    for rank in sorted(broken):
        host = host_of(rank, broken[rank])
        if host is not None:
            out[host] = NodeResult(host, error="its result came back cut (an output frame was lost)")
    for h in hosts:
        out.setdefault(h, NodeResult(h, error=missing))
    return out


class FanOut:
    """A plan of steps (node_worker.py) on every host at once, in one launch. The launch is prepared
    (and bad input refused) when this is made, so a caller makes it before storing any run; start()
    launches it, and results(i) waits for step i's results while the nodes go on."""

    def __init__(self, plan: list[dict], hosts: list[str], *, launcher: str | None,
                 on_lost: Callable[[str, str, str], None] | None = None):
        self.hosts, self.steps, self.limits = hosts, [], []
        self.launcher, self.on_lost = launcher, on_lost
        self.lost: dict[str, str] = {}   # host -> why it is taken for lost (heartbeat, then no answer)
        self.closed = False  # no steps will follow the plan's last (a waiting launch released)
        self.sharing = 1     # after results(): the most nodes that share one machine (one boot id)
        # -I -S: no site (its .pth files and editable-install hooks); the worker is stdlib only and
        # puts its own package root on the path. Its start-up is paid on every node.
        worker = [sys.executable, "-I", "-S", node_worker.__file__, "--plan", node_worker.plan_arg(plan)]
        # Not bound: the one process measures its whole node (its threads spread over its cores).
        self.spec = LaunchSpec(program=worker, np=len(hosts), hosts=[Host(h, 1) for h in hosts], bind="none")
        self.argv = prepare(self.spec, launcher)
        # Step i is over on every node by the launch's time (a daemon, then Python, on every node, as
        # the plan counts it) plus its own and the earlier steps' limits.
        self._add(plan, SLACK_S + LAUNCH_PER_NODE_S * len(hosts))
        # The file a waiting node reads its next steps from (Waiting), and that step's index: every
        # node has read it once each sent a later step's result, or the job is over.
        self._handoffs = [(i, Path(p["next"])) for i, p in enumerate(plan) if p["step"] == "next"]
        self._frames = Reassembly()
        self._changed = threading.Condition()
        self._job = None
        self._thread: threading.Thread | None = None
        self._start = 0.0

    def start(self) -> "FanOut":
        def frame(line: str) -> bool:   # the workers' frames, kept out of the failure's tail
            if MAGIC not in line:
                return False
            with self._changed:
                if self._frames.feed(line):
                    self._changed.notify_all()
            return True

        def launch():
            try:
                job = run_job(self.argv, lambda: self.limits[-1], env=self.spec.rank_env(), spec=self.spec,
                              on_stderr=frame, on_lost=self._silent, done=self._done)
            except Exception as e:   # a launch that could not start: every step's result is missing
                job = e
            with self._changed:
                self._job = job
                self._changed.notify_all()
            self._read(len(self.steps))   # after ended() holds: a hand-off file written later, Waiting removes

        self._start = time.monotonic()
        # a daemon: an interrupted survey exits, and the supervisor takes the job down with it
        self._thread = threading.Thread(target=launch, daemon=True)
        self._thread.start()
        return self

    def _silent(self, quiet: dict[int, float], ranks: dict) -> list[int]:
        """The watchdog's silent ranks (rank -> seconds): the ones whose host does not answer a
        launch either are lost (the job goes on without them); a host that answers is alive, its
        worker starved of CPU or its output held up, and is waited for."""
        from rmax.launch.reach import unanswered

        host_of = {r: self._host(r, ranks) for r in quiet}
        via = next((h for h in self.hosts if h not in self.lost and h not in host_of.values()), None)
        if via is None and len(host_of) > 1:
            return []   # every node silent at once: the launching side stalled (a loaded machine), not n nodes lost
        gone = unanswered(sorted(set(host_of.values())), self.launcher, run_job, via=via)
        taken = []
        for r, secs in quiet.items():
            h = host_of[r]
            if h in gone:
                step = self._step_of(r)
                why = f"no heartbeat for {secs:.0f} s" + (f" in step {step}" if step else "") + f", and {gone[h]}"
                with self._changed:
                    self.lost[h] = why
                    self._changed.notify_all()
                if self.on_lost:
                    self.on_lost(h, step or "?", why)
                taken.append(r)
        return taken

    def _host(self, rank: int, ranks: dict) -> str:
        """The host a rank runs on: the one it names (or its short name), else its place in the list."""
        said = ranks[rank].host if rank in ranks else ""
        short = {h.split(".")[0]: h for h in self.hosts}
        return said if said in self.hosts else short.get(said.split(".")[0]) or \
            (self.hosts[rank] if 0 <= rank < len(self.hosts) else said)

    def _step_of(self, rank: int) -> str | None:
        """The step a rank was in: the first of the plan it sent no result for."""
        with self._changed:
            sent = {s for (r, s) in self._frames.results if r == rank}
        return next((self.steps[i] for i in range(len(self.steps)) if i not in sent), None)

    def _done(self) -> bool:
        """Everything this launch is for has come back from every host not lost (the lost ones'
        daemons may never end): stop it. A launch without lost hosts ends by itself."""
        with self._changed:
            if not self.lost or (self.steps[-1] == "next" and not self.closed):
                return False
            last = len(self.steps) - 1
            return all((r, last) in self._frames.results for r in range(len(self.hosts))
                       if self.hosts[r] not in self.lost)

    def extend(self, plan: list[dict]) -> int:
        """Steps for nodes that wait in this launch's last step ("next", node_worker.py), with their
        limits from now; the index of the first. The job's own limit grows with them."""
        first = len(self.steps)
        self._add(plan, time.monotonic() - self._start + SLACK_S)
        return first

    def _add(self, plan: list[dict], since: float) -> None:
        """The plan's steps and their limits (seconds from the launch): each step over by `since`
        plus its own and the earlier steps' timeouts, each with the worker's grace to end it."""
        for p in plan:
            since += float(p["timeout"]) + node_worker.GRACE + 1.0
            self.steps.append(p["step"])
            self.limits.append(since)

    def _read(self, i: int) -> None:
        """Every node is past step i: the hand-off files of the steps before it are read."""
        for k, f in self._handoffs:
            if k < i:
                f.unlink(missing_ok=True)

    def wait(self, timeout: float) -> None:
        """The launch's end, for at most `timeout` seconds."""
        if self._thread:
            self._thread.join(timeout)

    def ended(self) -> bool:
        """No launch runs: it ended, or it never started."""
        return self._thread is None or self._job is not None

    def results(self, i: int) -> dict[str, NodeResult]:
        """Step i's result on every host: once every host sent it, the job ended, or step i's time is up."""
        deadline = self._start + self.limits[i]

        def waited() -> int:   # hosts still to send step i: not those lost meanwhile
            sent = {rank for (rank, s) in self._frames.results if s == i}
            return sum(1 for r, h in enumerate(self.hosts) if r not in sent and h not in self.lost)

        with self._changed:
            while self._job is None and waited():
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._changed.wait(min(left, 1.0))
            got = {rank: r for (rank, s), r in self._frames.results.items() if s == i}
            broken = {rank: h for (rank, s), h in self._frames.broken().items() if s == i} if self._job else {}
            job, lost = self._job, dict(self.lost)
        if not waited():
            self._read(i)
        boots = Counter(r["boot_id"] for r in got.values() if r.get("boot_id"))
        self.sharing = max(boots.values(), default=1)
        if job is None:
            missing = f"sent no result for {self.steps[i]} within {self.limits[i]:g} s of the launch"
        elif isinstance(job, Exception):
            missing = f"sent no result: {job}"
        else:
            missing = ("sent no result: " + str(job.failure("the fan-out"))) if not job.ok else "sent no result"
        out = assign(got, broken, self.hosts, missing)
        for h, why in lost.items():
            if out[h].error == missing:
                out[h].error = f"host {h} lost: {why}"
        return out


def store_per_node(store, parent: str, kind: str, hosts: list[str], results: Callable[[], dict[str, NodeResult]],
                   fields: dict, fill: Callable[[Run, NodeResult], None],
                   keep: Callable[[Run, NodeResult], None] | None = None) -> list[RunRecord]:
    """One stored run of `kind` per host under `parent` (its row from the start, `fields` its other
    columns), completed from results() (host -> NodeResult): fill(run, result) completes a node's run
    from what the node printed (raising RmaxError fails that run alone); a node's own error fails its
    run, named, or keep(run, result) finishes it from what it printed before (a program stopped at its time)."""
    from rmax.errors import RmaxError
    from rmax.inventory import load

    # Each node's writes are one commit (its row's few updates), the n rows inserted in one; the
    # store is held for one node's parsing at most, never while the nodes measure. The n runs take
    # one load reading at their start and one at their end (load.held), when the first is stored.
    with ExitStack() as stack:   # an interrupt or a lost launch finishes every node's run
        with store.batch(), load.held():
            runs = {h: stack.enter_context(store.start_run(kind, parent=parent, hosts=[h], **fields)) for h in hosts}
        got = results()
        stack.enter_context(load.held())   # left before the runs' own exits: an interrupt's take their own
        for h, run in runs.items():
            res = got[h]
            with store.batch():
                if res.error:
                    if keep:
                        keep(run, res)
                    else:
                        run.finish("failed", f"{h}: {res.error}")
                    continue
                try:
                    fill(run, res)
                except RmaxError as e:
                    run.finish("failed", f"{h}: {e}")
                if not run.finished:
                    run.finish("ok")
    return store.get_many([r.id for r in runs.values()])


class SurveyRuns:
    """A survey's runs as read once when its per-node steps launch (its nodes' inventories), the
    store a family's parser is given for a node's run: a parser may read that node's facts there
    (families/peakflops.cpu_facts: its CPU, from its inventory), and n parsers each reading the store
    would decode n x n stored runs (64 nodes: 3 CPU-s, on the cores the nodes measure with)."""

    def __init__(self, survey: str, runs: list[RunRecord]):
        self.survey, self.runs = survey, runs

    def children(self, run_id: str) -> list[RunRecord]:
        return list(self.runs) if run_id == self.survey else []


# What the kernel steps' parsers import: numpy (the staircases of cpurate, memlat and memcopy) and
# scipy.special (every summary's t quantile); NodeSteps._prepare imports them before the nodes measure.
PARSE_IMPORTS = ("numpy", "scipy.special")


@dataclass
class NodeStep:
    """One per-node family step of a group: its family, options and watchdog (seconds)."""
    name: str
    family: object
    options: object
    timeout: float
    turns: int = 0    # the nodes of one machine that take turns at it, one at a time (plan.StepPlan.turns)


class NodeSteps:
    """Consecutive per-node family steps of a survey in one launch: every node runs them one after
    the other, each with its own options, environment and time; records(name) stores that step's
    runs, one per node, as its results arrive. A step whose input its family refuses (Family.check)
    is left out of the launch and raises its refusal when its turn comes, with no run stored."""

    def __init__(self, ctx, steps: list[NodeStep]):
        from rmax.bench.family import RunContext
        from rmax.errors import RmaxError

        self.ctx, self.refused, self.steps, plan = ctx, {}, {}, []
        spread = ctx.facts.get("sharing", 1) > 1    # nodes on one machine: not all pinned to its first CPU
        line = turn_line()
        for s in steps:
            base = RunContext(store=ctx.store, parent=ctx.survey_id, launcher=ctx.launcher, timeout=s.timeout,
                              quick=ctx.quick)
            try:
                s.family.check(s.options, base)     # refused input becomes no run
            except RmaxError as e:
                self.refused[s.name] = e
                continue
            argv = s.family.argv(s.options)
            spec = LaunchSpec(program=argv, np=1, env=dict(s.family.env(s.options)),
                              blas_threads=s.family.blas_threads(s.options), bind="none")
            self.steps[s.name] = (len(plan), s, base, spec)
            item = {"step": s.name, "timeout": s.timeout, "argv": argv, "env": spec.rank_env(), "spread": spread}
            if s.turns > 1 and line:   # one node at a time, alone on the machine: its threads from the first CPU
                item.update(spread=False, turn={**line, "run": round(s.timeout / s.turns, 1), "of": s.turns})
            plan.append(item)
        # Each node's run carries that node's fingerprint, from its inventory in this survey (none
        # without one): not this host's, whose inventory would also walk every interface of a
        # virtual cluster's host. Read once here, not per step: the survey's runs, inventories
        # and all, are hundreds at 64 nodes.
        self.runs = SurveyRuns(ctx.survey_id, ctx.store.children(ctx.survey_id))
        self.prints = {r.hosts[0]: r.fingerprint for r in self.runs.children(ctx.survey_id)
                       if r.kind == "info" and r.status == "ok" and len(r.hosts) == 1}
        hosts = [h.name for h in ctx.nodes]
        self.fields: dict[str, dict] = {}
        self._prepared = threading.Thread(target=self._prepare, name="rmax-node-steps")
        self._prepared.start()
        # Nodes still in the inventory's launch, waiting, take the steps there; else a launch of their own.
        waiting, ctx.waiting, self.first = ctx.waiting, None, 0
        if waiting and plan:
            self.first, self.fan = waiting.extend(plan), waiting.fan
        else:
            if waiting:
                waiting.release()
            self.fan = FanOut(plan, hosts, launcher=ctx.launcher, on_lost=ctx.lose).start() if plan else None

    def _fields(self, name: str) -> dict:
        """The columns of step `name`'s runs besides their own results."""
        from rmax.bench.runner import environment

        _, s, base, spec = self.steps[name]
        return {"params": s.family.params(s.options, base), "environment": environment(spec),   # this host's,
                "argv": spec.program}                                                        # as run_kernel's

    def _prepare(self) -> None:
        """Every step's columns (the environment's BLAS probe starts programs) and the parsers' heavy
        imports, made while the launch starts the nodes: once the nodes measure, rmax has its share
        of the cores beside them (1/33 of 2 cores beside 64 virtual nodes, where a 0.5 CPU-s import
        took 15 s). What fails here is made again in records(), and raises there."""
        try:
            for name in self.steps:
                self.fields[name] = self._fields(name)
            for module in PARSE_IMPORTS:
                importlib.import_module(module)
        except Exception:   # made again, and reported, by records()
            pass

    def slowest(self, name: str) -> float | None:
        """Step `name`'s seconds on its slowest node, as that node timed it (None: no node said):
        what the plan sized. On nodes sharing one machine the surveying process, storing each
        result, has a sliver of the cores while they measure, so the time until the step's
        results are all stored includes the steps the nodes ran meanwhile; and the nodes do not
        start a step together (each goes on when it is done), so first start to last end would
        count their skew."""
        if name not in self.steps or self.fan is None:
            return None
        got = [r.seconds for r in self.fan.results(self.first + self.steps[name][0]).values() if r.seconds]
        return max(got) if got else None

    def records(self, name: str) -> list[RunRecord]:
        """Step `name`'s runs, one per node, each stopped at the step's time keeping what it measured (partial)."""
        from rmax.bench.runner import finish_from_output, keep_measured
        from rmax.errors import RunFailed

        if name in self.refused:
            raise self.refused[name]
        i, s, base, spec = self.steps[name]
        family, o = s.family, s.options
        self._prepared.join()
        fields = self.fields.get(name) or self._fields(name)

        def parser(res: NodeResult):
            # The parser of the node's own run: a family may read that node's facts (peakflops its
            # CPU), from the survey's runs as read at the launch.
            return family.reading(o, dataclasses.replace(base, store=self.runs, spec=LaunchSpec(
                program=spec.program, np=1, hosts=[Host(res.host, 1)])))

        def fill(run: Run, res: NodeResult) -> None:
            run.update(fingerprint=self.prints.get(res.host))
            finish_from_output(run, family.name, parser(res), res.stdout)

        def keep(run: Run, res: NodeResult) -> None:   # as a failed job's run (bench/runner.py)
            run.update(fingerprint=self.prints.get(res.host))
            keep_measured(run, parser(res), res.stdout, RunFailed(f"{res.host}: {res.error}"))

        # a node lost before this step gets no run of it: the survey names it once (SurveyContext.lost)
        hosts = [h for h in self.fan.hosts if h not in self.ctx.lost]
        return store_per_node(self.ctx.store, self.ctx.survey_id, family.name, hosts,
                              lambda: self.fan.results(self.first + i), fields, fill, keep)


def turn_line() -> dict | None:
    """Where the nodes of one machine queue for their turns in a launch (turns.py): this user's
    private folder (the same path on every node, made there if missing) and a key of the launch's own."""
    import secrets

    from rmax.inventory.shared import folder

    d = folder()
    return {"folder": str(d), "key": secrets.token_hex(8)} if d else None


def inventory_on_every_node(ctx, measure: bool, unmeasured: str, then: bool = False) -> list[RunRecord]:
    """The inventory on every node of the survey at once (rmax installed at the same path there), the
    sections that are the same on every node of one machine read once there (inventory/shared.py).
    `then`: per-node steps follow; nodes that see this process's folder wait in the launch for them
    (ctx.waiting, Waiting)."""
    import json

    from rmax.errors import RunFailed
    from rmax.inventory import fingerprint

    plan = [{"step": "inventory", "timeout": ctx.timeout,
             "inventory": {"measure": measure, "unmeasured": unmeasured, "survey": ctx.survey_id}}]
    waiting = Waiting.prepared() if then else None
    if waiting:
        plan.append({"step": "next", "timeout": ctx.timeout, "next": str(waiting.path)})
    fan = FanOut(plan, [h.name for h in ctx.nodes], launcher=ctx.launcher, on_lost=ctx.lose)
    if waiting:
        waiting.fan = fan

    def fill(run: Run, res: NodeResult) -> None:
        try:
            inv = json.loads(res.stdout)
        except ValueError:
            raise RunFailed("the inventory printed nothing readable") from None
        run.update(summary=inv, fingerprint=fingerprint(inv))

    try:
        records = store_per_node(ctx.store, ctx.survey_id, "info", fan.hosts, lambda: fan.start().results(0), {}, fill)
    except BaseException:
        if waiting:
            waiting.release(wait=False)
        raise
    if waiting:   # every node not lost waits for the steps that follow (each said so right after its inventory), or none
        live = [r for r in records if r.hosts[0] not in fan.lost]
        if live and all(r.status == "ok" for r in live) and \
                all(r.stdout == "waiting" for h, r in fan.results(1).items() if h not in fan.lost):
            ctx.waiting = waiting
        else:
            waiting.release()
    ctx.facts["sharing"] = fan.sharing
    return records


class Waiting:
    """The per-node steps that follow a survey's inventory, for nodes still in its launch: the file
    they wait for (node_worker.py's "next" step), in this user's private folder (inventory/shared.py),
    and its marker, by which a node knows that folder is this process's, made before the launch.
    Nodes that see it (nodes on this machine: a virtual cluster's) save a second launch, whose
    daemons and workers would take its cores from the nodes' measurements; elsewhere a second launch
    starts them (NodeSteps)."""

    def __init__(self, path: Path):
        self.path = path
        self.fan: FanOut | None = None   # the inventory's launch, in whose last step the nodes wait

    @classmethod
    def prepared(cls) -> "Waiting | None":
        import secrets

        from rmax.inventory.shared import folder
        from rmax.textfile import write_atomic

        d = folder()
        if d is None:
            return None
        got = cls(d / f"next-{secrets.token_hex(16)}.json")
        try:
            write_atomic(Path(f"{got.path}.wait"), "", mode=0o600, folder_is_ours=True)
        except Exception:   # no marker: the nodes take a second launch
            return None
        return got

    def extend(self, plan: list[dict]) -> int:
        """Give the waiting nodes `plan`; the index of its first step in the launch."""
        first = self.fan.extend(plan)
        self._write(plan)
        return first

    def release(self, wait: bool = True) -> None:
        """No steps follow: the waiting nodes end. Their launch is waited for (`wait`): its end
        removes the file; one that ended before the file was written (its nodes gave up or died)
        cannot, so the file goes here."""
        self._write([])
        if self.fan:
            self.fan.closed = True   # a lost node's launch ends once the others are done
            if wait:
                self.fan.wait(RELEASE_WAIT_S)
            if self.fan.ended():
                self.path.unlink(missing_ok=True)

    def _write(self, plan: list[dict]) -> None:
        import json

        from rmax.textfile import write_atomic

        try:
            write_atomic(self.path, json.dumps(plan), mode=0o600, folder_is_ours=True)
        finally:
            Path(f"{self.path}.wait").unlink(missing_ok=True)


def fit_shared_memory(o, ctx):
    """Options for nodes that share one machine (a virtual cluster's nodes share its memory): a
    per-node array size (stream's --size, bytes per array, up to three arrays) is cut so that every
    node's arrays fit in three quarters of the memory at once; on separate machines, o as it is."""
    k, mem, size = ctx.facts.get("sharing", 1), ctx.facts.get("mem_available"), getattr(o, "size", None)
    if k <= 1 or not mem or not size:
        return o
    return dataclasses.replace(o, size=min(size, max(2**20, mem // (4 * k) // 2**20 * 2**20)))
