"""The one path every benchmark takes: start a stored run, launch the kernel
under the watchdog, parse its JSON lines, complete the run.

Nothing is lost: the row exists from the start; a failed launch, a wrong
answer or an interrupt each leave it with the matching status. A job that
fails midway (a lost host, a timeout, a crash) keeps what it measured: the
records it printed so far go to the family's parser, and when they hold
samples the run is stored `partial` with them and the job's error."""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from typing import Callable

from rmax.errors import RunFailed
from rmax.launch import THREAD_VARIABLES, LaunchSpec, prepare, run_job
from rmax.store import Store, open_store
from rmax.store.runs import RunRecord

# Variables that change what a kernel measures; recorded with every run.
RECORDED_VARIABLES = (*THREAD_VARIABLES, "LD_LIBRARY_PATH", "OMPI_MCA_btl", "OMPI_MCA_pml", "UCX_TLS",
                      "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "SLURM_JOB_ID")


@dataclass
class Parsed:
    """What a family's parser makes of the kernel's JSON records."""

    summary: object             # the family's Summary (stored as its to_dict())
    samples: dict
    status: str = "ok"          # or "invalid" when the kernel's own validation failed
    error: str | None = None
    headline: str | None = None   # the list view's line of the summary (Family.reading adds it)


def parse_json_lines(text: str) -> list[dict]:
    records = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # a rank's stray output interleaved with ours; the parser checks completeness
    return records


def environment(spec: LaunchSpec) -> dict:
    """The environment a kernel ran in: thread settings, loader path, MPI and BLAS knobs, the MPI."""
    from rmax.blas import loaded_brief

    env = {k: os.environ[k] for k in RECORDED_VARIABLES if k in os.environ}
    env.update(spec.rank_env())
    try:
        blas = loaded_brief(env)
    except Exception as e:  # recording the BLAS must never stop a measurement
        blas = {"error": str(e)}
    # the MPI the ranks ran under (the launcher's build of rmax's executables: launch/builds.py)
    return {**env, "blas": blas, **({"mpi": spec.mpi} if spec.mpi else {})}


# The inventory behind a fingerprint takes about a second to collect; a process that stores many
# runs (a tuning session, the agent) reuses it for this long, so a software change is still seen.
FINGERPRINT_TTL_S = 300.0
_fingerprint_cache: tuple[float, str | None] | None = None


def fingerprint() -> str | None:
    global _fingerprint_cache
    now = time.monotonic()
    if _fingerprint_cache and now - _fingerprint_cache[0] < FINGERPRINT_TTL_S:
        return _fingerprint_cache[1]
    try:
        from rmax.inventory import collect, fingerprint as fp

        value = fp(collect(measure=False))
    except Exception:  # an inventory problem must not stop a measurement; the run just has no fingerprint
        return None
    _fingerprint_cache = (now, value)
    return value


def keep_measured(run, parse: Callable[[list[dict]], Parsed], stdout: str, err: RunFailed) -> None:
    """Finish a failed job's run: `partial`, with the samples its records so far hold, else `failed`."""
    records = parse_json_lines(stdout)
    try:
        parsed = parse(records) if records else None
    except Exception:  # a parser that cannot read a cut stream must not hide the job's own error
        parsed = None
    if parsed is None or not parsed.samples:
        run.finish("failed", str(err))
        return
    run.update(summary=_summary_dict(parsed), samples=parsed.samples, headline=parsed.headline)
    run.finish("partial", f"{err}; what was measured until then is kept")


def finish_from_output(run, kind: str, parse: Callable[[list[dict]], Parsed], stdout: str) -> None:
    """Complete a finished job's run from its records; RunFailed (run stored failed) when it printed none."""
    records = parse_json_lines(stdout)
    if not records:
        err = RunFailed(f"{kind} printed no results", hint="run with --debug to see the kernel's output")
        run.finish("failed", str(err))
        raise err
    parsed = parse(records)
    run.update(summary=_summary_dict(parsed), samples=parsed.samples, headline=parsed.headline)
    if parsed.status != "ok":
        run.finish(parsed.status, parsed.error)


def _summary_dict(parsed: Parsed) -> dict:
    return parsed.summary.to_dict() if hasattr(parsed.summary, "to_dict") else parsed.summary


def run_kernel(kind: str, spec: LaunchSpec, params: dict, parse: Callable[[list[dict]], Parsed], *,
               launcher: str | None = None, timeout: float = 600.0, store: Store | None = None,
               parent: str | None = None, label: str | None = None,
               on_stdout: Callable[[str], None] | None = None) -> RunRecord:
    """Run one kernel as one stored run; raises RunFailed when it fails (after storing it)."""
    argv = prepare(spec, launcher)  # refuses bad input before a run is stored
    own_store = store is None
    store = store or open_store()
    try:
        hosts = [h.name for h in spec.hosts] if spec.hosts else [os.uname().nodename]
        with store.start_run(kind, params=params, hosts=hosts, parent=parent, label=label,
                             environment=environment(spec), fingerprint=fingerprint(), argv=argv) as run:
            result = run_job(argv, timeout, env=spec.rank_env(), on_stdout=on_stdout, spec=spec)
            if not result.ok:
                err = result.failure(kind)
                keep_measured(run, parse, result.stdout, err)
                raise err
            finish_from_output(run, kind, parse, result.stdout)
        return store.get(run.id)
    finally:
        if own_store:
            store.close()
