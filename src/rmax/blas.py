"""Which BLAS libraries this system has, how to select one per run, and which one
a process really loads.

The native kernels link to the Fortran-ABI libblas.so.3, so the implementation is
chosen at run time: Debian installs each as an alternative in its own folder
(/usr/lib/<triplet>/<openblas-pthread|blis-pthread|atlas|blas>/libblas.so.3), and
putting that folder first on LD_LIBRARY_PATH makes the loader pick it."""

from __future__ import annotations

import glob
import hashlib
import json
import functools
import os
import platform
import re
import subprocess
import sys
from dataclasses import asdict, dataclass

from rmax.errors import RmaxError

SONAME = "libblas.so.3"

# family -> (folder prefixes, Debian package of the pthread build)
KNOWN = {
    "openblas": (("openblas-pthread", "openblas-openmp", "openblas-serial", "openblas"), "libopenblas0-pthread"),
    "blis": (("blis-pthread", "blis-openmp", "blis-serial", "blis"), "libblis4-pthread"),
    "atlas": (("atlas",), "libatlas3-base"),
    "reference": (("blas",), "libblas3"),
}


@dataclass(frozen=True)
class BlasLib:
    name: str            # family: openblas, blis, atlas, reference, or the file's own name
    path: str            # the libblas.so.3 to load (may be a symlink)
    dir: str             # the folder to put first on LD_LIBRARY_PATH
    variant: str         # the folder's name, e.g. openblas-pthread
    package: str | None  # Debian package that provides it, for known families
    priority: int | None = None   # update-alternatives priority, when registered
    selected: bool = False        # the current system-wide alternative

    def to_dict(self) -> dict:
        return asdict(self)


def triplet() -> str:
    import sysconfig
    return sysconfig.get_config_var("MULTIARCH") or f"{platform.machine()}-linux-gnu"


def libdir() -> str:
    return f"/usr/lib/{triplet()}"


def family_of(path: str) -> tuple[str, str | None]:
    """(family, Debian package) from the folder name, e.g. .../blis-pthread/libblas.so.3 -> blis."""
    folder = os.path.basename(os.path.dirname(path))
    for family, (prefixes, package) in KNOWN.items():
        if folder in prefixes:
            return family, package
    base = os.path.basename(os.path.realpath(path)).lower()
    for family in ("openblas", "blis", "atlas", "mkl"):
        if family in base or family in folder.lower():
            return family, KNOWN.get(family, (None, None))[1]
    return folder or base, None


def parse_alternatives(text: str) -> tuple[dict[str, int], str | None]:
    """`update-alternatives --query` -> ({path: priority}, current value)."""
    alts, current, path = {}, None, None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        value = value.strip()
        if key == "Value":
            current = value
        elif key == "Alternative":
            path = value
        elif key == "Priority" and path:
            alts[path] = int(value) if value.lstrip("-").isdigit() else None
            path = None
    return alts, current


def _query_alternatives() -> tuple[dict[str, int], str | None]:
    try:
        p = subprocess.run(["update-alternatives", "--query", f"{SONAME}-{triplet()}"],
                           capture_output=True, text=True, timeout=5, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return {}, None
    return parse_alternatives(p.stdout) if p.returncode == 0 else ({}, None)


def installed() -> list[BlasLib]:
    """Every libblas.so.3 the system has: registered alternatives plus folders that hold one."""
    alts, current = _query_alternatives()
    paths = dict.fromkeys(list(alts) + sorted(glob.glob(f"{libdir()}/*/{SONAME}")))
    libs = []
    for path in paths:
        if not os.path.exists(path):
            continue  # a registered alternative whose package was removed
        family, package = family_of(path)
        libs.append(BlasLib(name=family, path=path, dir=os.path.dirname(path),
                            variant=os.path.basename(os.path.dirname(path)), package=package,
                            priority=alts.get(path), selected=path == current))
    # pthread builds first within a family, so resolve("openblas") picks it
    libs.sort(key=lambda b: (b.name, "pthread" not in b.variant, -(b.priority or 0)))
    return libs


def _probe(path: str, env: dict | None = None, timeout: float = 20) -> dict:
    """Load `path` in a fresh Python and report what got loaded (see _PROBE)."""
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    # BLIS says on stderr which sub-configuration (kernel set) it picked, at its first call
    full_env.setdefault("BLIS_ARCH_DEBUG", "1")
    try:
        p = subprocess.run([sys.executable, "-c", _PROBE, path], capture_output=True, text=True,
                           timeout=timeout, env=full_env, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return {"error": f"loading {path} timed out after {timeout:g} s"}
    lines = p.stdout.strip().splitlines()
    if p.returncode != 0 or not lines:
        detail = (p.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": f"probe of {path} exited with {p.returncode}: {detail}"}
    info = json.loads(lines[-1])
    m = re.search(r"libblis: selecting sub-configuration '([^']+)'", p.stderr)
    if m:
        info["blis_subconfig"] = m.group(1)
    m = re.search(r"libblis: (Number of FMA units unknown[^\n]*)", p.stderr)
    if m:
        info["blis_note"] = m.group(1).strip()
    return info


def _check_is_blas(path: str) -> None:
    info = _probe(path)
    if "error" in info:
        raise RmaxError(f"{path} is not a loadable shared library: {info['error']}",
                        hint="give a BLAS shared library or a folder that holds libblas.so.3")
    if not info.get("has_dgemm"):
        raise RmaxError(f"{path} is not a BLAS: it does not export dgemm_",
                        hint="give a BLAS shared library or a folder that holds libblas.so.3")


def resolve(name_or_path: str) -> BlasLib:
    """A BLAS by family name (openblas, blis, atlas, reference), folder name
    (blis-openmp) or path (a library file or a folder that holds libblas.so.3)."""
    key = name_or_path.strip()
    libs = installed()
    if "/" not in key:
        lower = key.lower()
        for lib in libs:
            if lower in (lib.name, lib.variant):
                return lib
        for family, (prefixes, package) in KNOWN.items():
            if lower == family or lower in prefixes:
                raise RmaxError(f"BLAS '{key}' is not installed",
                                hint=f"install it with: apt-get install {package}")
        known = ", ".join(sorted({lib.name for lib in libs} | set(KNOWN)))
        raise RmaxError(f"unknown BLAS '{key}'", hint=f"use one of {known}, or a path to a libblas.so.3")
    path = os.path.abspath(os.path.expanduser(key))
    if os.path.isdir(path):
        path = os.path.join(path, SONAME)
    if not os.path.isfile(path):
        raise RmaxError(f"BLAS library {path} does not exist", hint="give an existing file or folder")
    for lib in libs:
        if os.path.realpath(lib.path) == os.path.realpath(path):
            return lib
    _check_is_blas(path)
    family, package = family_of(path)
    if os.path.basename(path) == SONAME:
        folder = os.path.dirname(path)
    else:
        folder = _shim_dir(path)  # the loader finds libblas.so.3 by file name, so link one to it
    return BlasLib(name=family, path=path, dir=folder, variant=os.path.basename(os.path.dirname(path)),
                   package=package)


def _shim_dir(path: str) -> str:
    """A private folder whose libblas.so.3 is a symlink to `path` (e.g. libopenblas.so.0, libmkl_rt.so)."""
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    real = os.path.realpath(path)
    folder = os.path.join(cache, "rmax", "blas", hashlib.sha256(real.encode()).hexdigest()[:12])
    os.makedirs(folder, exist_ok=True)
    link = os.path.join(folder, SONAME)
    if not (os.path.islink(link) and os.readlink(link) == real):
        tmp = f"{link}.{os.getpid()}"
        os.symlink(real, tmp)
        os.replace(tmp, link)
    return folder


def env_for(lib: BlasLib, base: dict | None = None) -> dict:
    """The LD_LIBRARY_PATH that makes libblas.so.3 resolve to `lib`, ahead of any existing one."""
    current = (os.environ if base is None else base).get("LD_LIBRARY_PATH", "")
    parts = [lib.dir] + [p for p in current.split(":") if p and p != lib.dir]
    return {"LD_LIBRARY_PATH": ":".join(parts)}


def loaded(env: dict | None = None) -> dict:
    """The BLAS a process really gets for libblas.so.3 under `env` (merged over os.environ):
    loaded in a subprocess, the providing file read from /proc/self/maps, identified by
    OpenBLAS/BLIS/MKL query functions where they exist, else by its path."""
    info = _probe(SONAME, env)
    if "error" in info:
        why = info["error"] + " (Debian: apt-get install libopenblas0-pthread)"
        fields = ("name", "path", "version", "config", "threads", "identified_by")
        return {**dict.fromkeys(fields), "libraries": [], "reasons": dict.fromkeys(fields, why)}
    path = info.get("dgemm_file") or info.get("soname_file")
    name, version, config, how = None, None, None, None
    if info.get("openblas_config"):
        name, config, how = "openblas", info["openblas_config"], "openblas_get_config"
        m = re.search(r"OpenBLAS\s+(\S+)", config)
        version = m.group(1) if m else None
        if info.get("openblas_core"):
            config += f" (core {info['openblas_core']})"
    elif info.get("blis_version"):
        name, version, how = "blis", info["blis_version"], "bli_info_get_version_str"
        config = f"arch {info['blis_arch']}" if info.get("blis_arch") else None
    elif info.get("blis_subconfig"):
        name, how = "blis", "BLIS_ARCH_DEBUG"
        config = f"sub-configuration {info['blis_subconfig']}"
        if info.get("blis_note"):
            config += f" ({info['blis_note']})"
    elif info.get("mkl_version"):
        name, version, config, how = "mkl", None, info["mkl_version"], "mkl_get_version_string"
    elif path:
        name, _ = family_of(path)
        how = "path"
        m = re.search(r"\.so\.(\d+(?:\.\d+)+)$", path)
        version = m.group(1) if m else None  # Debian names the file after the upstream version
    version_source = how if version else None
    if how == "path" and version:
        version_source = "file name"
    package, package_version = package_of(path) if path else (None, None)
    reasons = {}
    if version is None and package_version:
        version, version_source = package_version, "Debian package version"
    if version is None:
        reasons["version"] = "the library has no version query, and neither its file name nor dpkg gives one"
    if config is None:
        reasons["config"] = "the library has no configuration query"
    if info.get("threads") is None:
        reasons["threads"] = "the library has no thread-count query"
    if package is None:
        reasons["package"] = "dpkg does not know the file (not from a Debian package, or no dpkg)"
    return {"name": name, "path": path, "version": version, "config": config, "threads": info.get("threads"),
            "version_source": version_source, "package": package, "package_version": package_version, "dgemm_ok": info.get("dgemm_ok"),
            "libraries": info.get("libraries", []), "identified_by": how,
            "warnings": _warnings(name, info, env), "reasons": reasons}


def _kernel_fixes(name: str | None, info: dict, env: dict | None = None) -> list[tuple[dict, str]]:
    """(variables, reason) for a BLAS that picked kernels narrower than this CPU can run. Where the
    variable is already set (in `env` over os.environ) it is the user's choice, which rmax keeps:
    the reason then says that the setting, not the library, holds the kernels back."""
    merged = {**os.environ, **(env or {})}
    fixes = []
    flags = _cpu_flags()
    core = (info.get("openblas_core") or "").lower()
    if name == "openblas" and core and "avx2" in flags:
        avx512 = "avx512f" in flags
        wide = {"skylakex", "cooperlake", "sapphirerapids"}
        good = wide if avx512 else wide | {"haswell", "zen"}
        if core not in good:
            width, hint = ("AVX-512", "SkylakeX") if avx512 else ("AVX2", "Haswell")
            picked = f"OpenBLAS runs its '{info['openblas_core']}' kernels, which do not use this CPU's {width}"
            fixes.append(({"OPENBLAS_CORETYPE": hint}, _fix_reason(
                merged, "OPENBLAS_CORETYPE", hint, picked, "it does not know this CPU model")))
    if name == "blis" and info.get("blis_note") and "avx512f" in flags:
        fixes.append(({"BLIS_ARCH_TYPE": "skx"}, _fix_reason(
            merged, "BLIS_ARCH_TYPE", "skx", f"BLIS: {info['blis_note'].rstrip('.')}", None)))
    return fixes


def _fix_reason(merged: dict, var: str, hint: str, picked: str, cause: str | None) -> str:
    """The warning for one variable: the fix rmax applies, or the user's value it keeps."""
    if var in merged:
        # The user's value is never overridden (kernel_env), so rmax's jobs run these kernels too.
        return (f"{picked}: {var}={merged[var]} is set in the environment, and rmax keeps it for the jobs it "
                f"launches; unset it, or set {var}={hint}, for the widest kernels")
    return f"{picked}{f' ({cause})' if cause else ''}; {var}={hint} selects the right kernels, and rmax sets it for the jobs it launches"


def _warnings(name: str | None, info: dict, env: dict | None = None) -> list[str]:
    """Things about the loaded BLAS that cost performance or correctness, said plainly."""
    out = ["a 2x2 dgemm_ gave a wrong answer"] if info.get("dgemm_ok") is False else []
    return out + [why for _, why in _kernel_fixes(name, info, env)]


@functools.lru_cache(maxsize=8)
def _kernel_env_for(ld_library_path: str) -> tuple[tuple[str, str], ...]:
    info = _probe(SONAME, {"LD_LIBRARY_PATH": ld_library_path} if ld_library_path else None)
    if "error" in info:
        return ()
    name = "openblas" if info.get("openblas_config") else "blis" if info.get("blis_subconfig") or info.get("blis_version") else None
    return tuple(kv for env, _ in _kernel_fixes(name, info) for kv in env.items())


def kernel_env(env: dict | None = None) -> dict:
    """Variables that make the BLAS libblas.so.3 resolves to (under env) use this CPU's widest kernels.

    rmax sets them for every rank, so that a BLAS too old to know the CPU does not
    silently run SSE kernels; a value the user already set is never overridden."""
    merged = {**os.environ, **(env or {})}
    fix = dict(_kernel_env_for(merged.get("LD_LIBRARY_PATH", "")))
    return {k: v for k, v in fix.items() if k not in merged}


def _cpu_flags() -> set[str]:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def package_of(path: str) -> tuple[str | None, str | None]:
    """(Debian package, its version) that installed `path`, from dpkg."""
    try:
        p = subprocess.run(["dpkg", "-S", os.path.realpath(path)], capture_output=True, text=True, timeout=5,
                           stdin=subprocess.DEVNULL)
        if p.returncode != 0 or ":" not in p.stdout:
            return None, None
        package = p.stdout.split(":")[0].strip()
        q = subprocess.run(["dpkg-query", "-W", "-f=${Version}", package], capture_output=True, text=True,
                           timeout=5, stdin=subprocess.DEVNULL)
        return package, (q.stdout.strip() or None) if q.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired):
        return None, None


# Run in a fresh interpreter: load libblas.so.3 as the dynamic loader would for a
# kernel, then report the files it mapped and what the library says about itself.
_PROBE = r"""
import ctypes, json, sys
def maps():
    out = []
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split(None, 5)
            if len(parts) == 6 and parts[5].startswith("/"):
                lo, hi = (int(x, 16) for x in parts[0].split("-"))
                out.append((lo, hi, parts[5].strip()))
    return out
before = {m[2] for m in maps()}
try:
    lib = ctypes.CDLL(sys.argv[1])
except OSError as e:
    print(json.dumps({"error": str(e)})); sys.exit(0)
after = maps()
r = {"libraries": sorted({m[2] for m in after} - before), "has_dgemm": hasattr(lib, "dgemm_")}
if r["has_dgemm"]:
    addr = ctypes.cast(lib.dgemm_, ctypes.c_void_p).value
    r["dgemm_file"] = next((p for lo, hi, p in after if lo <= addr < hi), None)
if r["has_dgemm"]:
    # one 2x2 product: the library must not only load but compute (and BLIS initialises here)
    d, i = ctypes.c_double, ctypes.c_int
    n, one, zero, t = i(2), d(1.0), d(0.0), ctypes.c_char(b"N")
    A, B, C = (d * 4)(1, 2, 3, 4), (d * 4)(5, 6, 7, 8), (d * 4)()
    ref = ctypes.byref
    lib.dgemm_(ref(t), ref(t), ref(n), ref(n), ref(n), ref(one), A, ref(n), B, ref(n), ref(zero), C, ref(n),
               ctypes.c_size_t(1), ctypes.c_size_t(1))
    r["dgemm_ok"] = list(C) == [23.0, 34.0, 31.0, 46.0]
def call(fn, restype, *args):
    f = getattr(lib, fn, None)
    if f is None:
        return None
    f.restype = restype
    v = f(*args)
    return v.decode(errors="replace").strip() if isinstance(v, bytes) else v
r["openblas_config"] = call("openblas_get_config", ctypes.c_char_p)
r["openblas_core"] = call("openblas_get_corename", ctypes.c_char_p)
r["blis_version"] = call("bli_info_get_version_str", ctypes.c_char_p)
if r["blis_version"]:
    arch = call("bli_arch_query_id", ctypes.c_int)
    f = getattr(lib, "bli_arch_string", None)
    if f is not None and arch is not None:
        f.restype = ctypes.c_char_p
        r["blis_arch"] = f(arch).decode()
    r["threads"] = call("bli_thread_get_num_threads", ctypes.c_long)
if r["openblas_config"]:
    r["threads"] = call("openblas_get_num_threads", ctypes.c_int)
if hasattr(lib, "mkl_get_version_string"):
    buf = ctypes.create_string_buffer(256)
    lib.mkl_get_version_string(buf, 256)
    r["mkl_version"] = buf.value.decode(errors="replace").strip()
    r["threads"] = call("mkl_get_max_threads", ctypes.c_int)
print(json.dumps(r))
"""


@functools.lru_cache(maxsize=16)
def _brief(items: tuple[tuple[str, str], ...]) -> tuple[tuple[str, object], ...]:
    info = loaded(dict(items))
    return tuple((k, info.get(k)) for k in ("name", "path", "version", "config"))


def loaded_brief(env: dict | None = None) -> dict:
    """name, path, version and config of the BLAS a job gets under env (cached per environment):
    what every stored run records as the BLAS it was measured with."""
    keys = ("LD_LIBRARY_PATH", "OPENBLAS_CORETYPE", "BLIS_ARCH_TYPE", "OPENBLAS_NUM_THREADS")
    merged = {**os.environ, **(env or {})}
    return dict(_brief(tuple((k, merged[k]) for k in keys if k in merged)))
