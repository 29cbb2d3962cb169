"""A survey's per-node step on every node at once: one launch through the survey's launcher
(mpirun, srun, the virtual cluster), one process per node (node_worker.py), each node measuring
itself; its result comes back on stderr in frames (frames.py) and is stored as that node's own run under
the survey. A node that fails, hangs or is lost is stored failed under its name, and the others'
results are kept: the step's time no longer grows with the node count."""

from __future__ import annotations

import dataclasses
import sys
from collections import Counter
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Callable

from rmax.launch import Host, LaunchSpec, prepare, run_job
from rmax.store.runs import Run, RunRecord
from rmax.survey.frames import MAGIC, decode

# The whole job may run this much longer than each node's own limit: starting a worker on every
# node (a daemon per node, then Python), and reporting.
LAUNCH_S, LAUNCH_PER_NODE_S = 60.0, 0.5


@dataclass
class NodeResult:
    host: str
    stdout: str = ""
    error: str | None = None      # None: the program ran on the node and exited 0
    seconds: float | None = None  # the program's own time there


def assign(results: dict[int, dict], broken: dict[int, str], hosts: list[str], missing: str) -> dict[str, NodeResult]:
    """Each host's result: the rank that names it (its host name, or its short name), else the rank at
    its place in the list (launchers place rank i on the i-th host of a one-slot list). A host no rank
    reported for gets `missing` as its error."""
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
    """One program on every host at once. The launch is prepared (and bad input refused) when
    this is made, so a caller makes it before storing any run."""

    def __init__(self, program: list[str], hosts: list[str], *, launcher: str | None, timeout: float,
                 env: dict | None = None, blas_threads: int = 1):
        self.hosts, self.timeout = hosts, timeout
        self.sharing = 1     # after run(): the most nodes that share one machine (one boot id)
        worker = [sys.executable, "-m", "rmax.survey.node_worker", "--timeout", f"{timeout:g}", "--", *program]
        # Not bound: the one process measures its whole node (its threads spread over its cores).
        self.spec = LaunchSpec(program=worker, np=len(hosts), hosts=[Host(h, 1) for h in hosts],
                               env=dict(env or {}), blas_threads=blas_threads, bind="none")
        self.argv = prepare(self.spec, launcher)

    def run(self) -> dict[str, NodeResult]:
        frames: list[str] = []

        def frame(line: str) -> bool:   # the workers' frames, kept out of the failure's tail
            if MAGIC in line:
                frames.append(line)
                return True
            return False

        job = run_job(self.argv, self.timeout + LAUNCH_S + LAUNCH_PER_NODE_S * len(self.hosts),
                      env=self.spec.rank_env(), spec=self.spec, on_stderr=frame)
        results, broken = decode("\n".join(frames))
        boots = Counter(r["boot_id"] for r in results.values() if r.get("boot_id"))
        self.sharing = max(boots.values(), default=1)
        missing = ("sent no result: " + str(job.failure("the fan-out"))) if not job.ok else "sent no result"
        return assign(results, broken, self.hosts, missing)


def store_per_node(store, parent: str, kind: str, fan: FanOut, fields: dict,
                   fill: Callable[[Run, NodeResult], None],
                   keep: Callable[[Run, NodeResult], None] | None = None) -> list[RunRecord]:
    """Run `fan` with one stored run of `kind` per host under `parent` (its row from the start,
    `fields` its other columns); fill(run, result) completes a node's run from what the node
    printed (raising RmaxError fails that run alone); a node's own error fails its run, named,
    or keep(run, result) finishes it from what it printed before (a program stopped at its time)."""
    from rmax.errors import RmaxError

    with ExitStack() as stack:   # an interrupt or a lost launch finishes every node's run
        runs = {h: stack.enter_context(store.start_run(kind, parent=parent, hosts=[h], **fields)) for h in fan.hosts}
        got = fan.run()
        for h, run in runs.items():
            res = got[h]
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
    return [store.get(r.id) for r in runs.values()]


def family_on_every_node(family, o, ctx, timeout: float) -> list[RunRecord]:
    """A node family's run (Family.argv, env, parser) on every node of the survey at once, each
    node's program stopped after `timeout` s: a node stopped so keeps what it measured (partial)."""
    from rmax.bench.family import RunContext
    from rmax.bench.runner import environment, finish_from_output, fingerprint, keep_measured
    from rmax.errors import RunFailed

    base = RunContext(store=ctx.store, parent=ctx.survey_id, launcher=ctx.launcher, timeout=timeout,
                      quick=ctx.quick)
    family.check(o, base)     # refused input becomes no run
    argv = family.argv(o)
    fan = FanOut(argv, [h.name for h in ctx.nodes], launcher=ctx.launcher, timeout=timeout,
                 env=family.env(o), blas_threads=family.blas_threads(o))
    params, env, fp = family.params(o, base), environment(fan.spec), fingerprint()   # this host's, as run_kernel's

    def parser(res: NodeResult):
        # The parser of the node's own run: a family may read that node's facts (peakflops its CPU).
        return family.parser(o, dataclasses.replace(base, spec=LaunchSpec(program=argv, np=1,
                                                                          hosts=[Host(res.host, 1)])))

    def fill(run: Run, res: NodeResult) -> None:
        finish_from_output(run, family.name, parser(res), res.stdout)

    def keep(run: Run, res: NodeResult) -> None:   # as a failed job's run (bench/runner.py)
        keep_measured(run, parser(res), res.stdout, RunFailed(f"{res.host}: {res.error}"))

    return store_per_node(ctx.store, ctx.survey_id, family.name, fan,
                          {"params": params, "environment": env, "fingerprint": fp, "argv": fan.argv}, fill, keep)


def inventory_on_every_node(ctx, measure: bool) -> list[RunRecord]:
    """`rmax info --json` on every node of the survey at once (rmax installed at the same path there)."""
    import json

    from rmax.errors import RunFailed
    from rmax.inventory import fingerprint

    program = [sys.executable, "-m", "rmax", "info", "--json", "--measure" if measure else "--no-measure"]
    fan = FanOut(program, [h.name for h in ctx.nodes], launcher=ctx.launcher, timeout=ctx.timeout)

    def fill(run: Run, res: NodeResult) -> None:
        try:
            inv = json.loads(res.stdout)
        except ValueError:
            raise RunFailed("rmax info printed no inventory") from None
        run.update(summary=inv, fingerprint=fingerprint(inv))

    records = store_per_node(ctx.store, ctx.survey_id, "info", fan, {}, fill)
    ctx.facts["sharing"] = fan.sharing
    return records


def fit_shared_memory(o, ctx):
    """Options for nodes that share one machine (a virtual cluster's nodes share its memory): a
    per-node array size (stream's --size, bytes per array, up to three arrays) is cut so that every
    node's arrays fit in three quarters of the memory at once; on separate machines, o as it is."""
    k, mem, size = ctx.facts.get("sharing", 1), ctx.facts.get("mem_available"), getattr(o, "size", None)
    if k <= 1 or not mem or not size:
        return o
    return dataclasses.replace(o, size=min(size, max(2**20, mem // (4 * k) // 2**20 * 2**20)))
