"""What every network benchmark family shares when it launches rmax-net:
rank-count checks before launching, a memory check, the oversubscription
flag Open MPI needs, errors that name the host which did not answer, and
the message-size option types and table cells of their views, and the
verdict a run's records give."""

from __future__ import annotations

import dataclasses
import socket
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

from rmax.bench.runner import Parsed, run_kernel
from rmax.errors import RmaxError, RunFailed
from rmax.inventory.memory import available_bytes
from rmax.launch import LaunchSpec, get_launcher, local_slots
from rmax.launch.job import HostsLost
from rmax.launch.netscope import is_local
from rmax.params import Size, SizeList
from rmax.store import Store
from rmax.store.runs import RunRecord


def groups_argv(groups: list[list[str]] | None) -> list[str]:
    """rmax-net's --groups option for switch groups of hosts ('a,b;c,d'), or nothing."""
    return ["--groups", ";".join(",".join(g) for g in groups)] if groups else []


def require_ranks(np_: int, what: str, exactly: int | None = None, minimum: int | None = None) -> None:
    """Refuse a rank count the test cannot use, before anything is launched."""
    if exactly is not None and np_ != exactly:
        raise RmaxError(f"{what} needs exactly {exactly} ranks, not {np_}",
                        hint=f"pass --np {exactly} (the two ranks may be on different hosts)")
    if minimum is not None and np_ < minimum:
        raise RmaxError(f"{what} needs at least {minimum} ranks, not {np_}", hint=f"pass --np {minimum} or more")


def check_names(given, valid, what: str) -> None:
    """Refuse a name rmax-net does not know (a layer, an operation, a rank order)."""
    bad = [x for x in given if x not in valid]
    if bad:
        raise RmaxError(f"unknown {what} '{bad[0]}'", hint=f"one of: {', '.join(valid)}")


MAX_MESSAGE = 1 << 30   # rmax-net's limit: MPI counts are C ints
MESSAGE, MESSAGES = Size(0, MAX_MESSAGE), SizeList(0, MAX_MESSAGE)   # 0 bytes up to rmax-net's largest


def cell(value: float | None, scale: float = 1.0, spec: str = ".2f") -> str:
    """A table cell of value * scale ('—' when there is none)."""
    return "—" if value is None or value != value else format(value * scale, spec)


def check_message_sizes(sizes, what: str = "message size") -> None:
    for s in sizes:
        if s < 0 or s > MAX_MESSAGE:
            raise RmaxError(f"{what} {s} bytes is beyond the largest supported, 1 GiB",
                            hint="use smaller message sizes")


def check_memory(bytes_per_rank: int, ranks_here: int, what: str) -> None:
    """Sizes beyond memory fail here with one line, not in a swapping or OOM-killed job.
    (Each rank checks again for its own host in rmax-net.)"""
    avail = available_bytes()
    need = bytes_per_rank * max(ranks_here, 1)
    if avail is not None and need > 0.8 * avail:
        raise RmaxError(f"{what} need {need / 2**30:.1f} GiB on this host but only {avail / 2**30:.1f} GiB "
                        "is available", hint="use smaller message sizes")


def with_program(spec: LaunchSpec | None, program: list[str], np_default: int, launcher: str | None) -> LaunchSpec:
    """A copy of spec running `program`; Open MPI ranks that outnumber the cores yield the CPU when
    idle, or a busy-polling ping-pong between two ranks sharing a core takes milliseconds."""
    spec = spec or LaunchSpec(program=[], np=np_default)
    spec = dataclasses.replace(spec, program=list(program), extra_args=list(spec.extra_args),
                               env=dict(spec.env))
    chosen = get_launcher(launcher)
    if chosen.command != "mpirun":   # Open MPI's mpirun, directly or inside the virtual cluster
        return spec
    if spec.np > spec.slots:
        # More ranks than slots cannot each be bound to a core (Open MPI refuses to start).
        spec.bind = "none"
    # The virtual cluster's nodes all share this machine's cores.
    crowded = spec.np > spec.slots or (chosen.name == "vcluster" and spec.np > local_slots())
    if crowded and "mpi_yield_when_idle" not in spec.extra_args:
        spec.extra_args += ["--mca", "mpi_yield_when_idle", "1"]
    return spec


def _probe(host: str, timeout: float) -> str | None:
    """None when host accepts a TCP connection on the ssh port, else why not."""
    try:
        with socket.create_connection((host, 22), timeout=timeout):
            return None
    except socket.timeout:
        return f"no answer within {timeout:.0f} s"
    except OSError as e:
        return e.strerror or str(e)


def silent_hosts(spec: LaunchSpec, timeout: float = 3.0) -> list[tuple[str, str]]:
    """Remote hosts of spec that do not answer on the ssh port Open MPI starts its daemons through."""
    remote = [h.name for h in spec.hosts or [] if not is_local(h.name)]
    if not remote:
        return []
    with ThreadPoolExecutor(max_workers=min(16, len(remote))) as pool:
        reasons = list(pool.map(lambda h: _probe(h, timeout), remote))
    return [(h, r) for h, r in zip(remote, reasons) if r]


def launch(kind: str, spec: LaunchSpec, params: dict, parse: Callable[[list[dict]], Parsed], *,
           launcher: str | None, timeout: float, store: Store | None, parent: str | None,
           on_stdout: Callable[[str], None] | None = None, label: str | None = None) -> RunRecord:
    """run_kernel, with a failure that names the hosts when the ranks never started."""
    try:
        return run_kernel(kind, spec, params, parse, launcher=launcher, timeout=timeout, store=store,
                          parent=parent, on_stdout=on_stdout, label=label)
    except RunFailed as err:
        remote = [h.name for h in spec.hosts or [] if not is_local(h.name)]
        if not remote or isinstance(err, HostsLost):   # a lost host is named already
            raise
        # Only mpirun reaches hosts through ssh; other launchers have their own ways in.
        ssh = get_launcher(launcher).name == "mpirun"
        silent = silent_hosts(spec, timeout=min(3.0, max(timeout / 10, 0.5))) if ssh else []
        if silent:
            names = ", ".join(f"{h} ({why})" for h, why in silent)
            raise RunFailed(f"{kind} failed: host {names} did not answer",
                            hint="check that the host is up and reachable by ssh, or leave it out") from None
        if "timed out" in str(err) and "before its first step" in str(err):
            # rmax heard no rank: not started, or started where the network to them is down
            raise RunFailed(f"{err.message}; no rank was heard from on hosts {', '.join(remote)}",
                            hint="check that every host is up and reachable by ssh") from None
        raise


def split_records(records: list[dict], schema: str) -> tuple[dict | None, list[dict], dict | None]:
    """(header, points, done) of one rmax-net command's JSON lines."""
    recs = [r for r in records if r.get("schema") == schema]
    header = next((r for r in recs if r.get("record") == "header"), None)
    done = next((r for r in recs if r.get("record") == "done"), None)
    return header, [r for r in recs if r.get("record") == "point"], done


def cut_of(records: list[dict], schema: str) -> dict | None:
    """The "cut" record of a command whose sweep budget (--sweep-budget) ran out, if any."""
    return next((r for r in records if r.get("schema") == schema and r.get("record") == "cut"), None)


def swept(parsed: Parsed, cut: dict | None, what: str | None) -> Parsed:
    """A run whose sweep budget left `what` out (named from its cut record) is partial with what it
    measured, unless something worse already holds."""
    if cut is None or parsed.status != "ok":
        return parsed
    return Parsed(parsed.summary, parsed.samples, "partial",
                  f"sweep budget ({cut['sweep_budget']:g} s) used up: {what} left out")


def sweep_notes(what: str | None) -> list[str]:
    """A view's note for what the sweep budget left out."""
    return [f"sweep budget used up: {what} left out (not measured)"] if what else []


def header_summary(header: dict | None) -> dict:
    return {"hosts": header.get("hosts", []) if header else [],
            "mpi_library": header.get("mpi_library") if header else None}


def parsed_records(summary, samples: dict, bad: list[str], done: dict | None, invalid: str, stopped: str) -> Parsed:
    """A run's Parsed from its records: "invalid" where points failed their check (`invalid`, then the
    first five of `bad`), "failed" where the command stopped before its "done" record (`stopped`)."""
    if bad:
        return Parsed(summary, samples, "invalid", f"{invalid} {', '.join(bad[:5])}")
    if done is None:
        return Parsed(summary, samples, "failed", stopped)
    return Parsed(summary, samples)
