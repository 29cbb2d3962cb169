"""`rmax agent check`: a bounded-time health check for Slurm's HealthCheckProgram or a prolog.

It runs the agent's quick probes on this node `recent` times each and tests those values against
the node's own baseline, the agent's earlier values in the store, with the agent's drift test
(drift.judge): the same question `rmax agent status` answers, asked now. The outcome is one line
and an exit status: 0 for ok, undecided (too few baseline values: nothing to judge, so nothing is
measured either) and busy (other work on the node would make it look slow); 1 for drift or a probe
that failed or did not finish in time. Only with `drain` does it take the node out of Slurm
(`scontrol update ... State=DRAIN Reason=...`), with that line as the reason.

The probes are stored runs labelled `agent-check`, not `agent`: a check's values stay out of the
baseline they are judged by, which a health check every few minutes on a slow node would otherwise
fill with slow values within hours (the agent's own sets renew it over `history` intervals)."""

from __future__ import annotations

import os
import re
import shutil
import socket
import statistics
import subprocess
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from rmax.agent.config import AgentConfig
from rmax.agent.drift import judge
from rmax.agent.history import node_series
from rmax.agent.idle import IdleMonitor, SlurmCheck
from rmax.agent.probes import CHECK_LABEL, REGISTRY
from rmax.agent.units import shown
from rmax.errors import RmaxError
from rmax.inventory.load import proc_fields
from rmax.store import Store

CHECK_PROBES = ("dgemm",)       # a node that lost CPU time shows first in dgemm (docs/AGENT.md)
DEFAULT_TIMEOUT = 30.0          # slurmd kills a HealthCheckProgram after 60 s
REASON_MAX = 160                # characters of the drain reason
NODE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
FAILED = ("drift", "failed")    # the states that exit 1


@dataclass
class Outcome:
    state: str                  # ok | drift | failed | undecided | busy
    line: str                   # what was found, one line
    node: str
    rates: list[dict] = field(default_factory=list)
    drained: bool = False

    @property
    def exit_code(self) -> int:
        return 1 if self.state in FAILED else 0

    def as_dict(self) -> dict:
        return {"node": self.node, "state": self.state, "line": self.line, "exit_code": self.exit_code,
                "drained": self.drained, "rates": self.rates}


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


def check(cfg: AgentConfig, store: Store, probes: tuple[str, ...], timeout: float, node: str) -> Outcome:
    """`timeout` bounds the whole process, from its start."""
    deadline = time.monotonic() + timeout - _age()
    host = socket.gethostname()
    history = node_series(store, host, cfg.history)
    kinds = {REGISTRY[p].kind: p for p in probes}
    judged = {k: s for k, s in history.items() if s.kind in kinds}
    ready = {s.kind for s in judged.values() if len(s.values) >= cfg.min_history}
    if not ready:
        have = ", ".join(f"{s.probe}: {len(s.values)}" for s in judged.values()) or "none"
        return Outcome("undecided", f"undecided: no baseline of {cfg.min_history} values yet for {', '.join(probes)} "
                       f"on {host} (values: {have}); `rmax agent run` builds it; not measured, not drained", node)
    monitor = IdleMonitor(cfg.max_load, cfg.window, _OthersJobs(cfg.slurm, node))
    reading = monitor.measure()
    if not reading.idle:
        return Outcome("busy", f"busy: {reading.busy_reason}; not measured", node)
    busy: list[str] = []
    new: dict[tuple[str, str], list[float]] = {}
    with monitor.watch(lambda r: busy.append(r.busy_reason)):
        for probe in (REGISTRY[kinds[k]] for k in kinds if k in ready):
            for i in range(cfg.recent):
                left = deadline - time.monotonic()
                if left <= 0:
                    return Outcome("failed", f"failed: --timeout {timeout:g} s reached before {probe.name} probe "
                                   f"{i + 1} of {cfg.recent}", node)
                try:
                    rec = probe.run(replace(cfg, probe_timeout=left), store, label=CHECK_LABEL)
                except RmaxError as e:    # RunFailed (stored as failed) or refused before measuring
                    return Outcome("failed", f"failed: {probe.name} probe: {e.message}", node)
                for r in probe.rates(rec):
                    new.setdefault((r.probe, r.peer), []).append(r.value)
    if busy:
        return Outcome("busy", f"busy: work arrived during the check ({busy[0]}); not judged", node)
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
    """The drain reason: the line, what was found first and who found it last, in printable ASCII without
    quotes (scontrol and sinfo show it as given), cut short."""
    found = outcome.line.removeprefix(f"{outcome.state}: ")
    text = "".join(c if " " <= c <= "~" and c not in "\"'" else "?" for c in found)
    tail = f" [rmax agent check: {outcome.state}]"
    return (text if len(text) + len(tail) <= REASON_MAX else text[:REASON_MAX - len(tail) - 3] + "...") + tail


def drain(outcome: Outcome) -> str:
    """Drain the node in Slurm with the outcome's line as the reason; what happened, as a few words."""
    scontrol = shutil.which("scontrol")
    if not scontrol:
        return "not drained: scontrol not found"
    argv = [scontrol, "update", f"NodeName={outcome.node}", "State=DRAIN", f"Reason={reason(outcome)}"]
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired:
        return "not drained: scontrol did not answer within 30 s"
    if p.returncode != 0:
        said = next((l for l in reversed(p.stderr.splitlines()) if l.strip()), f"exit status {p.returncode}")
        return f"not drained: {said.strip()}"
    outcome.drained = True
    return f"drained {outcome.node}"
