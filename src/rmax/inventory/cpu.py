"""CPU model, topology, ISA, clocks and hypervisor, from /proc/cpuinfo and sysfs."""

from __future__ import annotations

import glob
import os
import re

from rmax.inventory.probe import Section, int_or_none, parse_cpulist, read_text, read_value

SYS_CPU = "/sys/devices/system/cpu"

# cpuinfo flag -> the name people use; widest last within each family.
ISA_FLAGS = [
    ("sse2", "SSE2"), ("sse3", "SSE3"), ("pni", "SSE3"), ("ssse3", "SSSE3"), ("sse4_1", "SSE4.1"),
    ("sse4_2", "SSE4.2"), ("avx", "AVX"), ("fma", "FMA"), ("avx2", "AVX2"),
    ("avx512f", "AVX-512F"), ("avx512cd", "AVX-512CD"), ("avx512dq", "AVX-512DQ"),
    ("avx512bw", "AVX-512BW"), ("avx512vl", "AVX-512VL"), ("avx512ifma", "AVX-512IFMA"),
    ("avx512vbmi", "AVX-512VBMI"), ("avx512_vbmi2", "AVX-512VBMI2"), ("avx512_vnni", "AVX-512VNNI"),
    ("avx512_bitalg", "AVX-512BITALG"), ("avx512_vpopcntdq", "AVX-512VPOPCNTDQ"),
    ("avx512_bf16", "AVX-512BF16"), ("avx512_fp16", "AVX-512FP16"),
    ("avx_vnni", "AVX-VNNI"), ("amx_tile", "AMX-TILE"), ("amx_bf16", "AMX-BF16"), ("amx_int8", "AMX-INT8"),
]


def parse_cpuinfo(text: str) -> list[dict[str, str]]:
    """One dict per 'processor' block, keys as cpuinfo spells them."""
    blocks, cur = [], {}
    for line in text.splitlines():
        if not line.strip():
            if cur:
                blocks.append(cur)
                cur = {}
            continue
        key, sep, value = line.partition(":")
        if sep:
            cur[key.strip()] = value.strip()
    if cur:
        blocks.append(cur)
    return blocks


def isa_list(flags: set[str]) -> list[str]:
    seen: list[str] = []
    for flag, name in ISA_FLAGS:
        if flag in flags and name not in seen:
            seen.append(name)
    return seen


def model_name_ghz(model: str | None) -> float | None:
    """'Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz' -> 2.4; None when the name carries no clock."""
    if not model:
        return None
    m = re.search(r"@\s*([0-9]+(?:\.[0-9]+)?)\s*GHz", model)
    return float(m.group(1)) if m else None


def topology_from_sysfs(root: str = SYS_CPU) -> dict | None:
    """Sockets, cores and threads of the online CPUs; None when sysfs has no topology."""
    online, _ = read_value(f"{root}/online")
    cpus = parse_cpulist(online) if online else [
        int(os.path.basename(p)[3:]) for p in glob.glob(f"{root}/cpu[0-9]*")]
    packages, cores = set(), set()
    for c in cpus:
        pkg, _ = read_value(f"{root}/cpu{c}/topology/physical_package_id")
        core, _ = read_value(f"{root}/cpu{c}/topology/core_id")
        if pkg is None or core is None:
            return None
        packages.add(pkg)
        cores.add((pkg, core))
    if not cpus:
        return None
    return {"sockets": len(packages), "cores": len(cores), "threads": len(cpus), "online_cpus": cpus}


def topology_from_cpuinfo(blocks: list[dict[str, str]]) -> dict:
    packages = {b.get("physical id", "0") for b in blocks}
    cores = {(b.get("physical id", "0"), b.get("core id", str(i))) for i, b in enumerate(blocks)}
    return {"sockets": len(packages), "cores": len(cores), "threads": len(blocks),
            "online_cpus": [int_or_none(b.get("processor")) for b in blocks]}


def cpufreq_max_hz(root: str = SYS_CPU) -> tuple[float | None, str | None]:
    for path in (f"{root}/cpu0/cpufreq/cpuinfo_max_freq", f"{root}/cpufreq/policy0/cpuinfo_max_freq"):
        value, _ = read_value(path)
        if value and value.isdigit():
            return int(value) * 1e3, None  # sysfs says kHz
    return None, "no cpufreq in sysfs (frequency scaling not exposed, common in VMs)"


def collect_cpu() -> dict:
    s = Section()
    text, reason = read_text("/proc/cpuinfo")
    blocks = parse_cpuinfo(text) if text else []
    first = blocks[0] if blocks else {}
    flags = set(first.get("flags", "").split())
    s.put("vendor", first.get("vendor_id"), reason or "no vendor_id in /proc/cpuinfo")
    s.put("model", first.get("model name"), reason or "no 'model name' in /proc/cpuinfo")
    s.put("family", int_or_none(first.get("cpu family")), reason or "no 'cpu family' in /proc/cpuinfo")
    s.put("model_number", int_or_none(first.get("model")), reason or "no 'model' in /proc/cpuinfo")
    s.put("stepping", int_or_none(first.get("stepping")), reason or "no stepping in /proc/cpuinfo")
    s.put("microcode", first.get("microcode"), reason or "no microcode in /proc/cpuinfo")

    topo = topology_from_sysfs()
    source = "sysfs topology"
    if topo is None and blocks:
        topo, source = topology_from_cpuinfo(blocks), "/proc/cpuinfo"
    for key in ("sockets", "cores", "threads"):
        s.put(key, topo[key] if topo else None, "neither sysfs topology nor /proc/cpuinfo readable")
    s["threads_per_core"] = (topo["threads"] // topo["cores"]) if topo and topo["cores"] else None
    if s["threads_per_core"] is None:
        s["reasons"]["threads_per_core"] = "core count unknown"
    s["online_cpus"] = topo["online_cpus"] if topo else []
    s["topology_source"] = source if topo else None

    s["flags"] = sorted(flags)
    s["isa"] = isa_list(flags)

    mhz = first.get("cpu MHz")
    s.put("cpuinfo_mhz", float(mhz) if mhz else None, reason or "no 'cpu MHz' in /proc/cpuinfo")
    s.put("cpufreq_max_hz", *cpufreq_max_hz())
    ghz = model_name_ghz(first.get("model name"))
    s.put("model_name_ghz", ghz, "model name carries no '@ x.xxGHz'")

    s["hypervisor_flag"] = "hypervisor" in flags
    return s.done()


def collect_virtualization(cpu: dict) -> dict:
    """Is this a VM, and whose? From the cpuinfo flag, DMI and /sys/hypervisor."""
    s = Section()
    s["hypervisor_flag"] = cpu.get("hypervisor_flag", False)
    for field, path in (("dmi_sys_vendor", "/sys/class/dmi/id/sys_vendor"),
                        ("dmi_product_name", "/sys/class/dmi/id/product_name"),
                        ("hypervisor_type", "/sys/hypervisor/type")):
        s.put(field, *read_value(path))
    s["cpufreq_exposed"] = cpu.get("cpufreq_max_hz") is not None
    s["is_vm"] = bool(s["hypervisor_flag"] or s["hypervisor_type"])
    return s.done()
