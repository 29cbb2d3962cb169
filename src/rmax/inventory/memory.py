"""Memory total and available from /proc/meminfo."""

from __future__ import annotations

from rmax.inventory.probe import Section, read_text


def parse_meminfo(text: str) -> dict[str, int]:
    """'MemTotal:  24684092 kB' -> {'MemTotal': 25276510208} (bytes; kB in meminfo is KiB)."""
    out = {}
    for line in text.splitlines():
        key, sep, rest = line.partition(":")
        parts = rest.split()
        if not sep or not parts or not parts[0].isdigit():
            continue
        scale = 1024 if len(parts) > 1 and parts[1] == "kB" else 1
        out[key.strip()] = int(parts[0]) * scale
    return out


def available_bytes() -> int | None:
    """MemAvailable now, in bytes (None where /proc/meminfo cannot be read): what a
    benchmark checks its buffers against before it allocates them."""
    text, _ = read_text("/proc/meminfo")
    return parse_meminfo(text).get("MemAvailable") if text else None


def collect_memory() -> dict:
    s = Section()
    text, reason = read_text("/proc/meminfo")
    info = parse_meminfo(text) if text else {}
    for field, key in (("total_bytes", "MemTotal"), ("available_bytes", "MemAvailable"),
                       ("free_bytes", "MemFree"), ("swap_total_bytes", "SwapTotal"),
                       ("hugepage_size_bytes", "Hugepagesize")):
        s.put(field, info.get(key), reason or f"no {key} in /proc/meminfo")
    s.put("hugepages_total", info.get("HugePages_Total"), reason or "no HugePages_Total in /proc/meminfo")
    return s.done()
