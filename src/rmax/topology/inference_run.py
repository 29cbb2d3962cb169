"""An inference as a stored run: read the matrix and its evidence from the store, infer, store
the answer (`topology` run); and the deciding measurement that an undecided answer asks for, run
as `rmax bench matrix` in a child process (its own stored run, with its own watchdog)."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import time

from rmax.errors import RmaxError


def infer_from_store(store, run_id: str | None, limits: dict):
    """(source run, later runs taken as evidence, hosts, Inference) for a stored all-pairs run
    (default: the latest)."""
    from rmax.topology.allpairs import matrices, measured_alone, with_evidence
    from rmax.topology.infer import Evidence, infer_groups

    source, later = with_evidence(store, run_id)
    hosts, lat, bw = matrices(source)
    evidence = [Evidence(*matrices(r), source=r.id, alone=measured_alone(r)) for r in later]
    return source, later, hosts, infer_groups(lat, bw, hosts, evidence=evidence, alone=measured_alone(source),
                                              **limits)


def store_inference(store, source, later, hosts: list[str], result, limits: dict, *, command: str | None = None,
                    measured: dict | None = None, parent: str | None = None):
    """The `topology` run holding the answer (its summary: the Inference, with the deciding command
    when undecided and what --measure did); returns its record."""
    summary = result.to_dict()
    if command:
        summary["command"] = command
    if measured is not None:
        summary["measured"] = measured
    with store.start_run("topology", params={"source": source.id, "source_kind": source.kind,
                                             "evidence": [r.id for r in later], **limits},
                         hosts=hosts, parent=parent) as run:
        run.update(summary=summary)
    return store.get(run.id)


def deciding_argv(source, hosts: list[str]) -> list[str]:
    """`rmax bench matrix`'s arguments that measure every pair of `hosts` (both directions,
    latency and bandwidth), one pair at a time so that a pair's rate is its path's, on the
    launcher the source run used (a virtual cluster's probe names its cluster)."""
    p = source.params or {}
    where = ["--hosts", ",".join(hosts), "--np", str(len(hosts))]
    if p.get("cluster"):
        where = ["--vcluster", str(p["cluster"])] + where
    elif p.get("launcher") == "vcluster":
        prefix = {h.rsplit("-n", 1)[0] for h in hosts}
        where = (["--vcluster", prefix.pop()] if len(prefix) == 1 else ["--launcher", "vcluster"]) + where
    elif p.get("launcher"):
        where = ["--launcher", str(p["launcher"])] + where
    return ["bench", "matrix", *where, "--design", "full", "--pairs-at-once", "1", "--quick"]


def deciding_command(source, hosts: list[str]) -> str:
    return shlex.join(["rmax", *deciding_argv(source, hosts)])


def measure_pairs(argv: list[str], seconds: float) -> str:
    """Run `rmax ARGV` (the deciding measurement) with a watchdog of `seconds`; its run's id."""
    cmd = [sys.executable, "-m", "rmax", *argv, "--timeout", str(max(1, int(seconds))), "--json"]
    try:
        # the run's own watchdog ends it; this bound only catches a child that hangs past it
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + GRACE_S)
    except subprocess.TimeoutExpired:
        raise RmaxError(f"the deciding measurement (rmax {' '.join(argv)}) ran past its {seconds:.0f} s") from None
    try:
        rec = json.loads(proc.stdout)
    except ValueError:
        rec = {}
    if proc.returncode != 0 or rec.get("status") != "ok":
        lines = proc.stderr.strip().splitlines()
        errors = [x.split("error:", 1)[1].strip() for x in lines if x.startswith("rmax: error:")]
        why = (errors or lines or [f"exit status {proc.returncode}"])[-1]     # its error line, not its hint
        raise RmaxError(f"the deciding measurement (rmax {' '.join(argv)}) did not end ok: {why}",
                        hint="run it by hand to see its output")
    return rec["id"]


GRACE_S = 120.0    # past its watchdog, for the child's MPI start and its run's closing


MEASURE_ROUNDS = 6      # deciding measurements at most: each narrows the candidates, or the data cannot
MEASURE_LEAST_S = 30.0  # the least budget for one deciding measurement (12 hosts' 66 pairs took 27-29 s here)


def measure_until_decided(source, later, result, limits: dict, budget: float, say=None):
    """Run the deciding command, infer again with its run as evidence, until decided, MEASURE_ROUNDS
    are done or the budget cannot hold another round (the first needs MEASURE_LEAST_S, each later
    one as long as the last took). Each run's watchdog is the budget left, so a round never
    outlasts it. Returns (source, later runs, Inference, the rounds, why it stopped undecided;
    a round that failed has "failed"); say: a function given a line per round."""
    from rmax.store import open_store

    say = say or (lambda line: None)
    deadline = time.monotonic() + budget
    rounds: list[dict] = []
    need = MEASURE_LEAST_S
    while not result.decided:
        left = deadline - time.monotonic()
        if len(rounds) >= MEASURE_ROUNDS:
            return source, later, result, rounds, f"still undecided after {len(rounds)} deciding measurements"
        if left < need:
            return source, later, result, rounds, (f"the budget is spent: {left:.0f} s left of {budget:.0f}, a "
                                                   f"deciding measurement needs about {need:.0f} s")
        say(f"measuring every pair of {len(result.decide)} hosts one pair at a time ({len(rounds) + 1} of at most "
            f"{MEASURE_ROUNDS}, {left:.0f} s of the budget left) ...")
        t0, hosts = time.monotonic(), list(result.decide)
        try:
            run_id = measure_pairs(deciding_argv(source, hosts), left)
        except RmaxError as e:     # the answer so far is kept; the caller says the measurement failed
            rounds.append({"run": None, "hosts": hosts, "seconds": round(time.monotonic() - t0, 1),
                           "failed": e.message})
            return source, later, result, rounds, f"the deciding measurement failed: {e.message}"
        took = time.monotonic() - t0
        need = took
        with open_store() as store:
            source, later, _, result = infer_from_store(store, source.id, limits)
        rounds.append({"run": run_id, "hosts": hosts, "seconds": round(took, 1), "answer": result.answer})
        say(f"  matrix run {run_id[:8]}, {took:.0f} s: {result.answer}")
    return source, later, result, rounds, ""


def answer_line(summary: dict, command: bool = True) -> str:
    """A stored inference's answer in one line, as the survey's summary and report state it
    (command: with the deciding command of an undecided one)."""
    from rmax.hostlist import compress

    answer = summary.get("answer")
    groups = summary.get("groups") or []
    if answer == "layout":
        levels = summary.get("levels") or []
        above = "".join(f"; above them {len(lv)} groups" for lv in levels[1:-1])
        return (f"layout: {len(groups)} switches ({'; '.join(compress(g) for g in groups)}){above}, "
                f"decided by {summary.get('decided_by')}")
    if answer == "one switch":
        return "one switch: no candidate layout has evidence on the pairs it was not made from"
    what = f"undecided between {len(summary.get('candidates') or [])} candidate layouts"
    if summary.get("switches_decided"):
        what += f" (the {len(groups)} switches decided, the levels above them not)"
    return what + (f"; to decide: {summary.get('command')} && rmax topology infer" if command else "")
