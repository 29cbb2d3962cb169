"""Which hosts answer a launch: one tiny job per host, all at once (a bounded number in flight),
through the launcher a command uses, as Slurm's own checks tell a down node from an up one.

A host answers when the launcher starts a program there and hears it exit within the time given,
which needs its daemon (Open MPI's prted, Hydra's proxy, slurmstepd) to come up and talk back over
the network: a node whose link or power is gone does not. On a loaded machine a launch is slow,
not silent, so the time given is generous next to a launch's own (a virtual cluster's two-host
launch took 0.3-1 s on 2 cores). Where the launcher starts from the first host of a job (a virtual
cluster's mpirun runs inside its first node), each job is that host and the one asked about, so
that what is tested is the link between them, not a node talking to itself."""

from __future__ import annotations

import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

from rmax.errors import RmaxError
from rmax.launch.base import LaunchSpec, get_launcher
from rmax.launch.hosts import Host

ANSWER_S = 10.0     # a host that starts nothing within this is taken for unreachable
IN_FLIGHT = 16      # launches at once: hundreds of hosts in about n / 16 launch times


def unanswered(hosts: list[str], launcher: str | None, run_job: Callable, *, via: str | None = None,
               timeout: float = ANSWER_S, in_flight: int = IN_FLIGHT) -> dict[str, str]:
    """The hosts that did not answer a launch within `timeout` s, each with the evidence (the
    launch's failure, or its silence); `via`, where the launcher starts from a job's first host,
    is the host the others are reached from (it is asked about alone). run_job: job.run_job (the
    watchdog, which asks here, passes its own)."""
    program = [shutil.which("true") or "true"]
    first = getattr(get_launcher(launcher), "starts_on_first_host", False)
    # srun's step would wait for the CPUs a running step holds (the survey's own fan-out): it shares them
    extra = list(getattr(get_launcher(launcher), "probe_args", []))

    took: list[float] = []   # the answered launches' seconds: how slow launching is now

    def ask(host: str, timeout: float = timeout) -> tuple[str, str | None]:
        pair = first and via and host != via
        spec = LaunchSpec(program=program, np=2 if pair else 1, bind="none", extra_args=extra,
                          hosts=[Host(via, 1), Host(host, 1)] if pair else [Host(host, 1)])
        start = time.monotonic()
        try:
            argv = get_launcher(launcher).argv(spec)
            job = run_job(argv, timeout, env=spec.rank_env(), spec=spec)
        except RmaxError as e:
            return host, str(e)
        if job.ok:
            took.append(time.monotonic() - start)
            return host, None
        said = f" from {via}" if pair else ""
        if job.timed_out:
            return host, f"no answer to a launch{said} within {timeout:g} s"
        return host, f"a launch{said} failed after {time.monotonic() - start:.1f} s: {job.failure('it').message}"

    with ThreadPoolExecutor(max_workers=max(1, min(in_flight, len(hosts)))) as pool:
        gone = {h: why for h, why in pool.map(ask, hosts) if why}
        silent = [h for h, why in gone.items() if why.startswith("no answer")]
        again = [] if not (silent and took and max(took) > timeout / 3) else \
            list(pool.map(lambda h: ask(h, 2 * timeout), silent))
        # launching is slow now (a loaded machine: the answered took a third of the time or more):
        # the silent ones were asked once more, for twice as long, before they are lost; a launch
        # that failed at once is asked again alone (launches started together have collided on
        # the launching host: Open MPI's "File exists")
        again += [ask(h) for h in gone if h not in silent]
    for h, why in again:
        if why:
            gone[h] = why
        else:
            del gone[h]
    others = [h for h in hosts if h != via]
    if first and via and len(others) > 1 and set(gone) >= set(others):
        # none answered from `via`: that one may be the host cut off; asked from the next
        turned = unanswered(hosts, launcher, run_job, via=others[0], timeout=timeout, in_flight=in_flight)
        if len(turned) < len(gone):
            gone = {**turned, via: turned.get(via) or f"reached none of the other {len(others)} hosts"}
    return gone

