"""Kernel, operating system, MPI implementations and compilers."""

from __future__ import annotations

import os
import platform
import re
import shutil

from rmax.inventory.probe import Section, read_text, run


def parse_os_release(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            out[key.strip()] = value.strip().strip('"')
    return out


def parse_mpi_version(text: str) -> tuple[str | None, str | None]:
    """(implementation, version) from `mpirun --version` / `mpiexec --version` output."""
    m = re.search(r"\(Open MPI\)\s+(\S+)", text) or re.search(r"Open MPI\D*(\d+\.\d+(?:\.\d+)?\S*)", text)
    if m:
        return "Open MPI", m.group(1)
    m = re.search(r"Intel\(R\) MPI Library.*?Version\s+(\S+)", text, re.S)
    if m:
        return "Intel MPI", m.group(1)
    m = re.search(r"HYDRA build details:.*?Version:\s+(\S+)", text, re.S)
    if m:
        # MPICH's launcher (Hydra) carries the MPICH version it was built with
        return "MPICH", m.group(1)
    m = re.search(r"slurm\s+(\S+)", text, re.I)
    if m:
        return "Slurm", m.group(1)
    return None, None


def parse_compiler_version(text: str) -> tuple[str | None, str | None]:
    """('gcc', '12.2.0') from 'gcc (Debian 12.2.0-14+deb12u1) 12.2.0'; clang and icx alike."""
    first = text.strip().splitlines()[0] if text.strip() else ""
    low = first.lower()
    name = ("clang" if "clang" in low else "icx" if "oneapi" in low or "icx" in low
            else "gcc" if "gcc" in low or "free software" in text.lower() else None)
    versions = re.findall(r"\b(\d+\.\d+(?:\.\d+)?)\b", first)
    # gcc prints its own version last; clang prints 'clang version X.Y.Z' first
    version = (versions[-1] if name == "gcc" else versions[0]) if versions else None
    return name, version


MPI_LAUNCHERS = ["mpirun", "mpiexec", "mpiexec.openmpi", "mpiexec.mpich", "mpiexec.hydra", "srun"]


def _slurm_configured() -> bool:
    conf = os.environ.get("SLURM_CONF") or "/etc/slurm/slurm.conf"
    return os.path.isfile(conf)


def collect_mpi() -> dict:
    found, reasons = [], {}
    seen_paths = set()
    for cmd in MPI_LAUNCHERS:
        path = shutil.which(cmd)
        if path is None:
            continue
        real = os.path.realpath(path)
        if real in seen_paths:
            continue  # mpiexec -> same binary as mpirun through the alternatives
        seen_paths.add(real)
        if cmd == "srun" and not _slurm_configured():
            # Without a configuration srun looks for one in DNS (a SRV query) before it prints anything:
            # an inventory must not send queries on the network.
            out, why = None, "no Slurm configuration here ($SLURM_CONF or /etc/slurm/slurm.conf)"
        else:
            out, why = run([cmd, "--version"], timeout=3, merge_stderr=True)
        impl, version = parse_mpi_version(out) if out else (None, None)
        entry = {"command": cmd, "path": real, "implementation": impl, "version": version, "reasons": {}}
        if impl is None:
            entry["reasons"]["implementation"] = why or "version output not recognised"
            entry["reasons"]["version"] = entry["reasons"]["implementation"]
        found.append(entry)
    default = next((e for e in found if e["command"] == "mpirun"), found[0] if found else None)
    if default is None:
        reasons["default"] = "no mpirun, mpiexec or srun on PATH (Debian: apt-get install openmpi-bin)"
    return {"default": default, "launchers": found, "builds": mpi_builds(), "reasons": reasons}


def mpi_builds() -> list[dict]:
    """The builds of rmax's MPI executables here, each with the MPI library it loads (rmax.native)."""
    from rmax.launch.builds import commands
    from rmax.native import MPI_EXECUTABLES, mpi_builds as builds

    out, first = [], None
    for b in builds().values():
        present = [n for n in MPI_EXECUTABLES if os.access(os.path.join(b.folder, n + b.suffix), os.X_OK)]
        subs = {n: commands(os.path.join(b.folder, n + b.suffix)) for n in ("rmax-net", "rmax-hpcc") if n in present}
        first = first or subs
        # what this build left out that the first has (fft where no FFTW MPI interface fits its MPI)
        missing = sorted(f"{n} {c}" for n in subs for c in first.get(n, frozenset()) - subs[n])
        out.append({**b.brief(), "suffix": b.suffix, "executables": [n + b.suffix for n in present],
                    "missing": missing})
    return out


def compiler(cmd: str) -> dict:
    path = shutil.which(cmd)
    entry = {"command": cmd, "path": os.path.realpath(path) if path else None, "name": None, "version": None,
             "first_line": None, "reasons": {}}
    if path is None:
        entry["reasons"] = {k: f"{cmd} not found on PATH" for k in ("path", "name", "version", "first_line")}
        return entry
    out, why = run([cmd, "--version"], timeout=5)
    if out is None:
        entry["reasons"] = {k: why for k in ("name", "version", "first_line")}
        return entry
    entry["first_line"] = out.strip().splitlines()[0] if out.strip() else None
    entry["name"], entry["version"] = parse_compiler_version(out)
    for k in ("name", "version"):
        if entry[k] is None:
            entry["reasons"][k] = "version output not recognised"
    return entry


def mpicc_wraps(mpicc: dict) -> tuple[str | None, str | None]:
    """Which MPI the mpicc wrapper belongs to: Open MPI answers -showme, MPICH -show."""
    if mpicc["path"] is None:
        return None, "mpicc not found on PATH (Debian: apt-get install libopenmpi-dev)"
    out, _ = run(["mpicc", "-showme:version"], timeout=5, merge_stderr=True)
    if out and "Open MPI" in out:
        return "Open MPI", None
    out, why = run(["mpicc", "-show"], timeout=5)
    if out and "mpich" in out.lower():
        return "MPICH", None
    return None, why or "neither -showme nor -show identified the wrapper"


def collect_compilers() -> dict:
    cc, mpicc = compiler("cc"), compiler("mpicc")
    wraps, why = mpicc_wraps(mpicc)
    mpicc["mpi"] = wraps
    if wraps is None:
        mpicc["reasons"]["mpi"] = why
    return {"cc": cc, "mpicc": mpicc}


def collect_system() -> dict:
    s = Section()
    u = platform.uname()
    s["hostname"] = u.node
    s["kernel"] = u.release
    s["kernel_version"] = u.version
    s["machine"] = u.machine
    text, why = read_text("/etc/os-release")
    osr = parse_os_release(text) if text else {}
    s.put("os", osr.get("PRETTY_NAME"), why or "no PRETTY_NAME in /etc/os-release")
    s["python"] = platform.python_version()
    return s.done()
