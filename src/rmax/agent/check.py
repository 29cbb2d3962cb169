"""`rmax agent check`: a bounded-time health check for Slurm's HealthCheckProgram or a prolog.

First the node's health as NHC checks it, with no baseline needed: a CPU quota on the check's
cgroup under `min_cpu_quota` CPUs, other processes' load of `unhealthy_load` runnable tasks or more
with no Slurm job on the node (a runaway process), and the check's cgroup throttled by its quota
`max_throttled` percent of the load window or more are `unhealthy`. Then it runs the agent's quick
probes on this node `recent` times each and tests those values against the node's own baseline,
the agent's earlier values in the store, with the agent's drift test (drift.judge): the same
question `rmax agent status` answers, asked now. The outcome is one line and an exit status: 0
for ok, undecided (too few baseline values: nothing to judge, so nothing is measured either) and
busy (a Slurm job, or a load under `unhealthy_load`, would make it look slow); 1 for unhealthy,
drift, or a probe that failed or did not finish in time. The line comes within `timeout` of the
process's start whatever is still running (an alarm ends the step, which the line names), so
that slurmd, which kills its HealthCheckProgram at 60 s, always gets it. Only with `drain` does it
take the node out of Slurm (`scontrol update ... State=DRAIN Reason=rmax: ...`), with that line as
the reason; with `resume` a node that passes (ok, or nothing to judge) and was drained by a check
(its reason begins with REASON_PREFIX) is returned to service, and no other.

The probes are stored runs labelled `agent-check`, not `agent`: a check's values stay out of the
baseline they are judged by, which a health check every few minutes on a slow node would otherwise
fill with slow values within hours (the agent's own sets renew it over `history` intervals)."""

from __future__ import annotations

import os
import re
import signal
import socket
import statistics
import time
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

from rmax.agent.config import AgentConfig
from rmax.agent.drift import judge
from rmax.agent.history import node_series
from rmax.agent.idle import IdleMonitor, SlurmCheck
from rmax.agent.probes import CHECK_LABEL, REGISTRY
from rmax.agent.units import shown
from rmax.errors import RmaxError
from rmax.inventory.load import cpu_quota, proc_fields
from rmax.launch.drain import NODE_NAME, REASON_MAX, drain as drain_node, scontrol
from rmax.store import Store

CHECK_PROBES = ("dgemm",)       # a node that lost CPU time shows first in dgemm (docs/AGENT.md)
DEFAULT_TIMEOUT = 30.0          # slurmd kills a HealthCheckProgram after 60 s
MARGIN = 5.0                    # seconds of the timeout kept for the line and the drain after an alarm
MIN_PROBE = 1.0                 # seconds: a probe given less than this is not started
REASON_PREFIX = "rmax: "        # a drain reason that begins so is a check's: only those are resumed
FAILED = ("drift", "failed", "unhealthy")    # the states that exit 1
PASSED = ("ok", "undecided")    # nothing found wrong in what could be judged: a node drained by a check resumes


class _Alarm(Exception):
    """The check's deadline passed (SIGALRM) while a step still ran."""


@dataclass
class Outcome:
    state: str                  # ok | drift | failed | undecided | busy
    line: str                   # what was found, one line
    node: str
    rates: list[dict] = field(default_factory=list)
    drained: bool = False
    resumed: bool = False

    @property
    def exit_code(self) -> int:
        return 1 if self.state in FAILED else 0

    def as_dict(self) -> dict:
        return {"node": self.node, "state": self.state, "line": self.line, "exit_code": self.exit_code,
                "drained": self.drained, "resumed": self.resumed, "rates": self.rates}


def node_name(given: str | None) -> str:
    """Slurm's name of this node: --node, else SLURMD_NODENAME (slurmd sets it for its health check
    and prologs, srun for job steps), else the short host name."""
    name = given or os.environ.get("SLURMD_NODENAME") or socket.gethostname().split(".")[0]
    if not NODE_NAME.match(name):
        what = "--node" if given else "the node name"
        raise RmaxError(f"{what}: {name[:60]!r} is not a Slurm node name")
    return name


class _OthersJobs(SlurmCheck):
    """Slurm jobs on this node other than the one this check runs in (a prolog's or srun's own job)."""

    def jobs(self):
        ids, why = super().jobs()
        own = os.environ.get("SLURM_JOB_ID")
        return [j for j in ids if j != own], why


def _rate_text(r: dict, cfg: AgentConfig) -> str:
    """The measurement first (sinfo -R shows a reason's first 20 characters), then its baseline, how far
    off, and which statistic: each probe's own (median of timed blocks, STREAM's best), its median
    over the check's values and over the baseline's. A significant shift too small to be drift says so."""
    p = f"p={r['p_value']:.2g}"
    if r["state"] == "drift":
        p += f" < {cfg.alpha:g}"
    elif r["p_value"] < cfg.alpha:
        p += f", under the {cfg.min_change:g}% that counts"
    return (f"{r['probe']} {shown(r['now'], r['unit'])} {100 * r['deviation']:+.0f}% against baseline "
            f"{shown(r['baseline'], r['unit'])} ({r['statistic']}; {len(r['values'])} values now, {r['n_baseline']} "
            f"before; {p})")


def _age() -> float:
    """Seconds since this process started: Python's start on a node starved of CPU time takes seconds
    too, and slurmd's 60 s count from the start (proc(5): starttime, in clock ticks after boot)."""
    f = proc_fields("/proc/self/stat")
    try:
        uptime = float(Path("/proc/uptime").read_text().split()[0])
        return max(0.0, uptime - int(f[19]) / os.sysconf("SC_CLK_TCK")) if f else 0.0
    except (OSError, ValueError, IndexError):
        return 0.0


@contextmanager
def _alarm_at(deadline: float):
    """SIGALRM at `deadline` (time.monotonic), raising _Alarm in whatever the main thread runs."""
    def ring(signum, frame):
        raise _Alarm()

    previous = signal.signal(signal.SIGALRM, ring)
    signal.setitimer(signal.ITIMER_REAL, max(0.01, deadline - time.monotonic()))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def check(cfg: AgentConfig, store: Store, probes: tuple[str, ...], timeout: float, node: str) -> Outcome:
    """`timeout` bounds the whole process, from its start: at `timeout` less MARGIN, whatever step
    still runs is stopped and the outcome says which."""
    started = time.monotonic() - _age()
    deadline = started + timeout - MARGIN
    step = ["reading this node's CPU quota"]
    try:
        with _alarm_at(deadline):
            return _check(cfg, store, probes, timeout, node, deadline, step)
    except _Alarm:
        return Outcome("failed", f"failed: no verdict within --timeout {timeout:g} s (less {MARGIN:g} s for this "
                       f"line): {step[0]} was still running {time.monotonic() - started:.1f} s after the check "
                       "started", node)


def _health(cfg: AgentConfig, node: str, step: list[str]) -> tuple[Outcome | None, IdleMonitor]:
    """The node's health before any probe: its CPU quota, other processes' load, throttling. An
    outcome when the node is unhealthy or busy; None when the probes may run."""
    quota, throttled0, where = cpu_quota()
    if quota is not None and quota < cfg.min_cpu_quota:
        return Outcome("unhealthy", f"unhealthy: a CPU quota of {quota:.3g} CPUs on this check's cgroup ({where}), "
                       f"under min_cpu_quota {cfg.min_cpu_quota:g}", node), None
    step[0] = f"the {cfg.window:g} s load window" + (" and the Slurm job query" if cfg.slurm != "off" else "")
    monitor = IdleMonitor(cfg.max_load, cfg.window, _OthersJobs(cfg.slurm, node))
    t0 = time.monotonic()
    reading = monitor.measure()
    share = 100 * max(0.0, cpu_quota()[1] - throttled0) / max(1e-3, time.monotonic() - t0)
    if reading.cause in ("slurm_job", "slurm_unanswered"):
        return Outcome("busy", f"busy: {reading.busy_reason}; not measured", node), monitor
    if reading.load >= cfg.unhealthy_load:
        top = ", ".join(f"pid {pid} {name} {load:.2f}" for pid, name, load in monitor.top())
        return Outcome("unhealthy", f"unhealthy: load of other processes {reading.load:.2f} >= unhealthy_load "
                       f"{cfg.unhealthy_load:g} with no Slurm job on this node" + (f" ({top})" if top else ""),
                       node), monitor
    if share >= cfg.max_throttled:
        cap = f"a CPU quota of {quota:.3g} CPUs ({where})" if quota is not None else "a CPU quota"
        return Outcome("unhealthy", f"unhealthy: throttled {share:.0f}% of the {cfg.window:g} s load window by {cap}, "
                       f"max_throttled {cfg.max_throttled:g}%", node), monitor
    if not reading.idle:
        return Outcome("busy", f"busy: {reading.busy_reason}; not measured", node), monitor
    return None, monitor


def _check(cfg: AgentConfig, store: Store, probes: tuple[str, ...], timeout: float, node: str, deadline: float,
           step: list[str]) -> Outcome:
    host = socket.gethostname()
    found, monitor = _health(cfg, node, step)
    if found is not None:
        return found
    step[0] = "reading the baseline"
    history = node_series(store, host, cfg.history)
    kinds = {REGISTRY[p].kind: p for p in probes}
    judged = {k: s for k, s in history.items() if s.kind in kinds}
    ready = {s.kind for s in judged.values() if len(s.values) >= cfg.min_history}
    if not ready:
        have = ", ".join(f"{s.probe}: {len(s.values)}" for s in judged.values()) or "none"
        return Outcome("undecided", f"undecided: no baseline of {cfg.min_history} values yet for {', '.join(probes)} "
                       f"on {host} (values: {have}); `rmax agent run` builds it; healthy, not measured", node)
    busy: list[str] = []
    new: dict[tuple[str, str], list[float]] = {}
    with monitor.watch(lambda r: busy.append(r.busy_reason)):
        for probe in (REGISTRY[kinds[k]] for k in kinds if k in ready):
            for i in range(cfg.recent):
                limit = min(cfg.probe_timeout, deadline - time.monotonic())
                what = f"the {probe.name} probe {i + 1} of {cfg.recent}"
                if limit < MIN_PROBE:
                    return Outcome("failed", f"failed: {what} not started: {max(0.0, limit):.1f} s of --timeout "
                                   f"{timeout:g} s left (less {MARGIN:g} s for this line), under the {MIN_PROBE:g} s "
                                   "a probe needs", node)
                step[0] = f"{what} (its limit {limit:.1f} s)"
                try:
                    rec = probe.run(replace(cfg, probe_timeout=limit), store, label=CHECK_LABEL)
                except RmaxError as e:    # RunFailed (stored as failed) or refused before measuring
                    return Outcome("failed", f"failed: {what}, given {limit:.1f} s of --timeout {timeout:g} s: "
                                   f"{e.message}", node)
                for r in probe.rates(rec):
                    new.setdefault((r.probe, r.peer), []).append(r.value)
    if busy:
        return Outcome("busy", f"busy: work arrived during the check ({busy[0]}); not judged", node)
    step[0] = "the drift test"
    rates = []
    for key, values in sorted(new.items()):
        s = judged.get(key)
        if s is None or len(s.values) < cfg.min_history:
            continue
        v = judge(s.values + values, s.higher_is_better, len(values), cfg.history, cfg.min_history, cfg.alpha,
                  cfg.min_shift)
        now = statistics.median(values)
        rates.append({"probe": s.probe, "statistic": s.statistic, "unit": s.unit, "values": values, "now": now,
                      "baseline": v.baseline, "n_baseline": v.n_baseline, "deviation": now / v.baseline - 1,
                      "p_value": v.p_value, "state": v.state})
    if not rates:
        return Outcome("failed", f"failed: {', '.join(probes)} measured no rate", node)
    drifted = [r for r in rates if r["state"] == "drift"]
    shown_rates = drifted or rates
    state = "drift" if drifted else "ok"
    return Outcome(state, f"{state}: " + "; ".join(_rate_text(r, cfg) for r in shown_rates), node, rates)


def reason(outcome: Outcome) -> str:
    """The drain reason: REASON_PREFIX (what --resume looks for), what was found (sinfo -R shows a
    reason's first 20 characters), and the state, readable as written: quotes kept (scontrol gets
    it as one argument), control characters made spaces, cut short."""
    found = outcome.line.removeprefix(f"{outcome.state}: ")
    text = "".join(c if c.isprintable() else " " for c in found)
    tail = f" [{outcome.state}]"
    room = REASON_MAX - len(REASON_PREFIX) - len(tail)
    return REASON_PREFIX + (text if len(text) <= room else text[:room - 3] + "...") + tail


def drain(outcome: Outcome) -> str:
    """Drain the node in Slurm with the outcome's line as the reason; what happened, as a few words."""
    said = drain_node(outcome.node, reason(outcome))
    outcome.drained = said.startswith("drained")
    return said


def resume(outcome: Outcome) -> str | None:
    """Return a node that passed to service when a check drained it (its reason begins with
    REASON_PREFIX); what happened, or None when there was nothing to do (not drained, or drained
    by someone else, whose reason is left alone)."""
    if outcome.state not in PASSED:
        return None
    p, err = scontrol(["show", "node", "-o", outcome.node])
    if err:
        return f"not resumed: {err}"
    state = re.search(r"\bState=(\S+)", p.stdout)
    why = p.stdout.split(" Reason=", 1)[1].strip() if " Reason=" in p.stdout else ""
    if not state or "DRAIN" not in state.group(1) or not why.startswith(REASON_PREFIX):
        return None
    _, err = scontrol(["update", f"NodeName={outcome.node}", "State=RESUME"])
    if err:
        return f"not resumed: {err}"
    outcome.resumed = True
    return f"resumed {outcome.node}, drained by a check for: {why.removeprefix(REASON_PREFIX)}"
