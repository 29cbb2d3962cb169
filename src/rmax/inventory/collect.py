"""Gather every section, the slow probes concurrently, then the peak measurement alone
(so nothing else competes with it for the cores)."""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone

from rmax.inventory import caches, cpu, memory, nics, numa, rpeak, software

SCHEMA = "rmax.info/1"


def _blas() -> dict:
    from rmax import blas
    libs = [lib.to_dict() for lib in blas.installed()]
    reasons = {} if libs else {"installed": "no libblas.so.3 alternatives found (Debian: apt-get install "
                                            "libopenblas0-pthread)"}
    return {"loaded": blas.loaded(), "installed": libs, "reasons": reasons}


def _nics() -> dict:
    names, collect_one = nics.interfaces()
    with ThreadPoolExecutor(max_workers=8) as pool:
        found = list(pool.map(collect_one, names))
    return {"interfaces": found, "reasons": {} if names else {"interfaces": "/sys/class/net is empty"}}


# Sections that are the same on every node of one machine that shares one file system and one
# environment (software found on PATH, the BLAS, the hardware's caches as hwloc sees them): the
# nodes of a virtual cluster may read them once between them (shared.py).
MACHINE_SECTIONS = ("caches", "mpi", "compilers", "blas")


def read_sections(jobs: dict[str, Callable[[], dict]]) -> tuple[dict, dict[str, str]]:
    """Each section's reader run concurrently: (section -> value, section -> internal error)."""
    results: dict = {}
    errors: dict[str, str] = {}
    with ThreadPoolExecutor(max_workers=max(1, len(jobs))) as pool:
        futures = {name: pool.submit(fn) for name, fn in jobs.items()}
        for name, fut in futures.items():
            try:
                results[name] = fut.result()
            except Exception as e:  # a reader bug must not take the other sections down
                results[name] = None
                errors[name] = f"{type(e).__name__}: {e}"
    return results, errors


Reuse = Callable[[Callable[[], tuple[dict, dict]]], tuple[dict, dict, str | None]]


def collect(measure: bool = True, unmeasured: str = "not measured (--no-measure)", reuse: Reuse | None = None) -> dict:
    """This node's facts as a JSON-serialisable dict (schema: rmax/schemas/info.schema.json);
    `unmeasured`: why the FMA peak was not measured, when it was not. `reuse(read)` returns the
    MACHINE_SECTIONS (results, errors, the host that read them): read(), or what another node of
    this machine read (shared.py); without it this node reads them."""
    t0 = time.monotonic()
    cpu_facts = cpu.collect_cpu()
    jobs = {
        "system": software.collect_system,
        "caches": lambda: caches.collect_caches(cpus=cpu_facts.get("online_cpus") or None),
        "memory": memory.collect_memory,
        "numa": numa.collect_numa,
        "nics": _nics,
        "mpi": software.collect_mpi,
        "compilers": software.collect_compilers,
        "blas": _blas,
    }
    machine = {name: jobs.pop(name) for name in MACHINE_SECTIONS} if reuse else {}
    with ThreadPoolExecutor(max_workers=1) as pool:   # this node's own sections meanwhile
        shared = pool.submit(reuse, lambda: read_sections(machine)) if reuse else None
        results, errors = read_sections(jobs)
        read_on = None
        if shared:
            more, more_errors, read_on = shared.result()
            results.update(more)
            errors.update(more_errors)

    rows, why = rpeak.measure_peak() if measure else (None, unmeasured)
    try:
        rp = rpeak.derive(cpu_facts, rows, why)
    except Exception as e:
        rp, errors["rpeak"] = None, f"{type(e).__name__}: {e}"

    inv = {
        "schema": SCHEMA,
        "collected_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "hostname": (results.get("system") or {}).get("hostname") or os.uname().nodename,
        "fingerprint": None,
        "system": results["system"],
        "cpu": cpu_facts,
        "virtualization": cpu.collect_virtualization(cpu_facts),
        "caches": results["caches"],
        "memory": results["memory"],
        "numa": results["numa"],
        "nics": results["nics"],
        "mpi": results["mpi"],
        "compilers": results["compilers"],
        "blas": results["blas"],
        "rpeak": rp,
        "measured": measure,
        "errors": errors,
    }
    if read_on:
        inv["machine_sections_read_on"] = read_on
    inv["fingerprint"] = fingerprint(inv)
    inv["collect_seconds"] = round(time.monotonic() - t0, 3)
    return inv


def stable_facts(inv: dict) -> dict:
    """What identifies this node's hardware and software: not free memory, not measured rates."""
    c = inv.get("cpu") or {}
    mpi = ((inv.get("mpi") or {}).get("default") or {})
    blas_loaded = ((inv.get("blas") or {}).get("loaded") or {})
    return {
        "cpu": [c.get(k) for k in ("vendor", "model", "family", "model_number", "stepping",
                                   "sockets", "cores", "threads")],
        "isa": c.get("isa"),
        "memory_total": (inv.get("memory") or {}).get("total_bytes"),
        "kernel": (inv.get("system") or {}).get("kernel"),
        "mpi": [mpi.get("implementation"), mpi.get("version")],
        "blas": blas_loaded.get("path"),
    }


def fingerprint(inv: dict) -> str:
    """16 hex chars identifying the node's stable facts (same node, same software: same value)."""
    text = json.dumps(stable_facts(inv), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]
