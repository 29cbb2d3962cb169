"""Cache hierarchy from sysfs, cross-checked against hwloc where it is installed."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from rmax.inventory.probe import int_or_none, listdir, read_value, run

SYS_CPU = "/sys/devices/system/cpu"


def parse_size(text: str | None) -> int | None:
    """sysfs cache size '48K' / '2048K' / '260M' -> bytes."""
    if not text:
        return None
    text = text.strip()
    mult = {"K": 1024, "M": 1024 ** 2, "G": 1024 ** 3}.get(text[-1:].upper(), 1)
    digits = text[:-1] if text[-1:].isalpha() else text
    return int(digits) * mult if digits.isdigit() else None


def read_sysfs_caches(root: str = SYS_CPU, cpus: list[int] | None = None) -> list[dict]:
    """One entry per distinct cache (level, type), with how many instances exist
    (distinct shared_cpu_list values across CPUs) and which CPUs share one."""
    if cpus is None:
        cpus = [int(d[3:]) for d in listdir(root) if d.startswith("cpu") and d[3:].isdigit()]
    found: dict[tuple, dict] = {}
    for c in sorted(cpus):
        base = f"{root}/cpu{c}/cache"
        for idx in listdir(base):
            if not idx.startswith("index"):
                continue
            d = f"{base}/{idx}"
            vals = {k: read_value(f"{d}/{k}")[0] for k in (
                "level", "type", "size", "ways_of_associativity", "coherency_line_size",
                "number_of_sets", "shared_cpu_list")}
            key = (int_or_none(vals["level"]), vals["type"])
            entry = found.setdefault(key, {
                "level": key[0], "type": vals["type"], "size_bytes": parse_size(vals["size"]),
                "ways": int_or_none(vals["ways_of_associativity"]),
                "line_bytes": int_or_none(vals["coherency_line_size"]),
                "sets": int_or_none(vals["number_of_sets"]),
                "shared_cpu_lists": [],
            })
            if vals["shared_cpu_list"] and vals["shared_cpu_list"] not in entry["shared_cpu_lists"]:
                entry["shared_cpu_lists"].append(vals["shared_cpu_list"])
    out = []
    for key in sorted(found, key=lambda k: (k[0] or 0, k[1] or "")):
        e = found[key]
        e["instances"] = len(e["shared_cpu_lists"]) or None
        out.append(e)
    return out


_HWLOC_TYPES = {"0": "Unified", "1": "Data", "2": "Instruction"}


def parse_hwloc_xml(text: str) -> list[dict]:
    """Caches in hwloc's XML (v2 object types L1Cache..L5Cache, L1iCache...; v1 'Cache')."""
    root = ET.fromstring(text)
    found: dict[tuple, dict] = {}
    for obj in root.iter("object"):
        t = obj.get("type", "")
        if "Cache" not in t or obj.get("cache_size") is None:
            continue
        level = int_or_none(obj.get("depth"))
        ctype = _HWLOC_TYPES.get(obj.get("cache_type", "0"), "Unified")
        key = (level, ctype)
        e = found.setdefault(key, {"level": level, "type": ctype, "size_bytes": int(obj.get("cache_size")),
                                   "ways": int_or_none(obj.get("cache_associativity")),
                                   "line_bytes": int_or_none(obj.get("cache_linesize")), "instances": 0})
        e["instances"] += 1
    return [found[k] for k in sorted(found, key=lambda k: (k[0] or 0, k[1]))]


def hwloc_caches() -> tuple[list[dict] | None, str | None, str | None]:
    """(caches, tool used, reason when unavailable)."""
    reasons = []
    for argv in (["lstopo-no-graphics", "--of", "xml"], ["hwloc-ls", "--of", "xml"]):
        out, why = run(argv, timeout=5)
        if out is None:
            reasons.append(why)
            continue
        try:
            return parse_hwloc_xml(out), argv[0], None
        except ET.ParseError as e:
            reasons.append(f"{argv[0]} printed unparsable XML: {e}")
    return None, None, "; ".join(reasons)


def cross_check(sysfs: list[dict], hwloc: list[dict] | None) -> list[str] | None:
    """Disagreements between sysfs and hwloc on size or instance count ([] = they agree)."""
    if hwloc is None:
        return None
    h = {(c["level"], c["type"]): c for c in hwloc}
    diffs = []
    for c in sysfs:
        other = h.get((c["level"], c["type"]))
        name = f"L{c['level']} {c['type']}"
        if other is None:
            diffs.append(f"{name}: in sysfs, not in hwloc")
            continue
        for key in ("size_bytes", "instances"):
            if c.get(key) is not None and other.get(key) is not None and c[key] != other[key]:
                diffs.append(f"{name} {key}: sysfs {c[key]}, hwloc {other[key]}")
    return diffs


def collect_caches(cpus: list[int] | None = None, hwloc: tuple | None = None) -> dict:
    sysfs = read_sysfs_caches(cpus=cpus)
    hw, tool, why = hwloc if hwloc is not None else hwloc_caches()
    reasons = {}
    if not sysfs:
        reasons["levels"] = f"no cache directories under {SYS_CPU}/cpu*/cache"
    if hw is None:
        reasons["hwloc"] = why
    return {"levels": sysfs, "hwloc": hw, "hwloc_tool": tool, "disagreements": cross_check(sysfs, hw),
            "source": "sysfs", "reasons": reasons}


def sysfs_levels() -> dict[str, int]:
    """Data and unified caches the system reports, per instance: {'L1d': 49152, 'L2': ..., 'L3': ...}."""
    try:
        levels = read_sysfs_caches()
    except Exception:  # inventory unavailable: boundaries are still shown, just without the reference
        return {}
    out = {}
    for c in levels:
        if c.get("type") == "Instruction" or not c.get("size_bytes"):
            continue
        name = f"L{c['level']}" + ("d" if c.get("type") == "Data" else "")
        out[name] = c["size_bytes"]
    return out
