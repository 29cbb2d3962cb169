"""The `rmax info` table: one key/value block for the node, then tables for caches,
NICs, BLAS and Rpeak. A null shows as a dash with its reason."""

from __future__ import annotations

from rich import box
from rich.console import Group
from rmax.terminal import Table
from rmax.inventory.rpeak import plural
from rich.text import Text


DASH = "—"


def gib(n: int | None) -> str:
    return f"{n / 2**30:.1f} GiB" if n is not None else DASH


def size(n: int | None) -> str:
    if n is None:
        return DASH
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale and n % scale == 0 or n >= 10 * scale:
            return f"{n / scale:g} {unit}"
    return f"{n} B"


def why(section: dict | None, field: str) -> str:
    reason = ((section or {}).get("reasons") or {}).get(field)
    return f"{DASH} ({reason})" if reason else DASH


def val(section: dict | None, field: str, fmt=str) -> str:
    v = (section or {}).get(field)
    return fmt(v) if v is not None else why(section, field)


def _kv(title: str) -> Table:
    t = Table(title=title, title_justify="left", title_style="bold", box=box.SIMPLE_HEAD, show_header=False,
              pad_edge=False)
    t.add_column(style="bold", no_wrap=True)
    t.add_column(overflow="fold")
    return t


def _cpus(cpus: list[int] | None) -> str:
    if not cpus:
        return DASH
    ranges, start = [], cpus[0]
    for a, b in zip(cpus, cpus[1:] + [None]):
        if b != a + 1:
            ranges.append(f"{start}-{a}" if a != start else str(a))
            start = b
    return ",".join(ranges)


def node_table(inv: dict) -> Table:
    c, sysinfo, virt = inv.get("cpu") or {}, inv.get("system") or {}, inv.get("virtualization") or {}
    t = _kv(f"Node {inv.get('hostname')}  (fingerprint {inv.get('fingerprint')})")
    t.add_row("OS / kernel", f"{val(sysinfo, 'os')}; Linux {sysinfo.get('kernel')} {sysinfo.get('machine')}")
    model = val(c, "model")
    if c.get("family") is not None:
        model += f"  ({c.get('vendor')} family {c['family']} model {c.get('model_number')} stepping {c.get('stepping')})"
    t.add_row("CPU", model)
    t.add_row("Topology", f"{plural(c.get('sockets'), 'socket')}, {plural(c.get('cores'), 'core')}, "
                          f"{plural(c.get('threads'), 'thread')} "
                          f"({val(c, 'threads_per_core')} per core); online CPUs {_cpus(c.get('online_cpus'))}")
    t.add_row("ISA", " ".join(c.get("isa") or []) or DASH)
    clocks = [f"cpuinfo {c['cpuinfo_mhz']:.0f} MHz" if c.get("cpuinfo_mhz") else f"cpuinfo MHz {why(c, 'cpuinfo_mhz')}",
              f"cpufreq max {c['cpufreq_max_hz'] / 1e6:.0f} MHz" if c.get("cpufreq_max_hz")
              else f"cpufreq max {why(c, 'cpufreq_max_hz')}",
              f"model name {c['model_name_ghz']} GHz" if c.get("model_name_ghz") else f"model name {why(c, 'model_name_ghz')}"]
    t.add_row("Clock", "; ".join(clocks))
    vm = "yes (cpuinfo flag 'hypervisor')" if virt.get("hypervisor_flag") else "no hypervisor flag"
    vm += f"; DMI vendor {val(virt, 'dmi_sys_vendor')}"
    if virt.get("hypervisor_type"):
        vm += f"; /sys/hypervisor/type {virt['hypervisor_type']}"
    t.add_row("Virtual machine", vm)
    m = inv.get("memory") or {}
    t.add_row("Memory", f"{val(m, 'total_bytes', gib)} total, {val(m, 'available_bytes', gib)} available "
                        f"(/proc/meminfo)")
    n = inv.get("numa") or {}
    if n.get("nodes"):
        nodes = "; ".join(f"node{x['id']}: CPUs {_cpus(x.get('cpus'))}, {gib(x.get('memory_bytes'))}"
                          for x in n["nodes"])
        total = sum(x.get("memory_bytes") or 0 for x in n["nodes"])
        mem_total = (inv.get("memory") or {}).get("total_bytes")
        if mem_total and abs(total - mem_total) > 0.05 * mem_total:
            nodes += f" (nodes' memory sums to {gib(total)}, /proc/meminfo MemTotal is {gib(mem_total)})"
        t.add_row("NUMA", f"{plural(len(n['nodes']), 'node')}: {nodes}")
    else:
        t.add_row("NUMA", why(n, "count"))
    mpi = inv.get("mpi") or {}
    if mpi.get("launchers"):
        t.add_row("MPI", "; ".join(
            (f"{e['command']}: {e['implementation']} {e.get('version') or ''}".rstrip() if e.get("implementation")
             else f"{e['command']}: {why(e, 'implementation')}")
            + (" (default)" if mpi.get("default") and e["command"] == mpi["default"]["command"] else "")
            for e in mpi["launchers"]))
    else:
        t.add_row("MPI", why(mpi, "default"))
    if "builds" in mpi:   # rmax's own MPI executables, one build per MPI (docs/MPI.md)
        t.add_row("rmax MPI builds", "; ".join(
            f"{b['build']}: {b.get('implementation') or b['library']} {b.get('version') or ''}".rstrip()
            + f" ({', '.join(b['executables'])}" + (f"; without {', '.join(b['missing'])}" if b.get("missing") else "")
            + ")" for b in mpi["builds"]) or "none (run 'make install')")
    comp = inv.get("compilers") or {}
    for key in ("cc", "mpicc"):
        e = comp.get(key) or {}
        text = f"{e.get('name')} {e.get('version')}" if e.get("name") else why(e, "name")
        if key == "mpicc" and e.get("path"):
            text += f" (wrapper of {e.get('mpi') or DASH})"
        t.add_row(key, text)
    return t


def cache_table(inv: dict) -> Table:
    ca = inv.get("caches") or {}
    t = Table(title="Caches (sysfs)", title_justify="left", title_style="bold", box=box.SIMPLE_HEAD)
    for col in ("Level", "Type", "Size", "Ways", "Line (B)", "Sets", "Instances", "Shared by CPUs"):
        t.add_column(col, justify="right" if col not in ("Type", "Shared by CPUs") else "left")
    for e in ca.get("levels") or []:
        kind = {"Instruction": "Instr."}.get(e.get("type"), e.get("type") or DASH)
        t.add_row(f"L{e['level']}", kind, size(e.get("size_bytes")), str(e.get("ways") or DASH),
                  str(e.get("line_bytes") or DASH), str(e.get("sets") or DASH), str(e.get("instances") or DASH),
                  " | ".join(e.get("shared_cpu_lists") or []) or DASH)
    d = ca.get("disagreements")
    if d is None:
        t.caption = f"hwloc cross-check: {why(ca, 'hwloc')}"
    else:
        t.caption = (f"hwloc ({ca.get('hwloc_tool')}) agrees" if not d else
                     f"hwloc ({ca.get('hwloc_tool')}) disagrees: " + "; ".join(d))
    t.caption_justify = "left"
    return t


def nic_table(inv: dict) -> Table:
    t = Table(title="Network interfaces", title_justify="left", title_style="bold", box=box.SIMPLE_HEAD)
    for col in ("Name", "Kind", "Driver", "Link (Mbit/s)", "MTU", "State", "Coalescing (ethtool -c)"):
        t.add_column(col, justify="right" if col in ("Link (Mbit/s)", "MTU") else "left", overflow="fold")
    for e in (inv.get("nics") or {}).get("interfaces") or []:
        co = e.get("coalesce")
        if co is None:
            co_text = "not readable"
        else:
            keys = ("adaptive-rx", "rx-usecs", "rx-frames", "adaptive-tx", "tx-usecs", "tx-frames")
            co_text = " ".join(f"{k}={co[k]}" for k in keys if k in co) or "nothing reported"
        speed = str(e["speed_mbps"]) if e.get("speed_mbps") else "unknown"
        t.add_row(e["name"], e.get("kind") or DASH, e.get("driver") or DASH, speed, str(e.get("mtu") or DASH),
                  e.get("operstate") or DASH, co_text)
    return t


def blas_table(inv: dict) -> Group:
    b = inv.get("blas") or {}
    ld = b.get("loaded") or {}
    t = _kv("BLAS")
    if ld.get("name"):
        t.add_row("Loaded (libblas.so.3)", f"{ld['name']} {ld.get('version') or DASH} — {ld.get('path')}")
        t.add_row("Identified by", f"{ld.get('identified_by')}; package {ld.get('package') or DASH} "
                                   f"{ld.get('package_version') or ''}".rstrip())
        if ld.get("config"):
            t.add_row("Configuration", ld["config"] + (f"; {ld['threads']} threads" if ld.get("threads") else ""))
    else:
        t.add_row("Loaded (libblas.so.3)", why(ld, "name"))
    for w in ld.get("warnings") or []:
        t.add_row(Text("Warning", style="yellow bold"), Text(w, style="yellow"))
    alt = Table(box=box.SIMPLE_HEAD, title="Installed alternatives", title_justify="left")
    for col in ("Name", "Folder", "Package", "Priority", "System default"):
        alt.add_column(col, justify="right" if col == "Priority" else "left", no_wrap=True)
    libs = b.get("installed") or []
    parents = {lib["dir"].rsplit("/", 1)[0] for lib in libs}
    if len(parents) == 1:
        alt.caption, alt.caption_justify = f"folders under {parents.pop()}/; `--json` has full paths", "left"
    for lib in libs:
        alt.add_row(lib["name"], lib["variant"] if alt.caption else lib["dir"], lib.get("package") or DASH,
                    str(lib["priority"]) if lib.get("priority") is not None else DASH,
                    "yes" if lib.get("selected") else "")
    return Group(t, alt)


def rpeak_table(inv: dict) -> Group:
    r = inv.get("rpeak") or {}
    t = _kv("Rpeak (double precision)")
    t.add_row("Nominal", r.get("formula") or why(r, "nominal_gflops"))
    if r.get("fma_units") is not None:
        t.add_row("FMA units", f"{r['fma_units']} ({r.get('fma_units_source')}): {r.get('fma_units_detail')}")
    elif r.get("fma_units_source"):
        t.add_row("FMA units", f"{DASH} ({r.get('fma_units_detail')})")
    m = r.get("measured")
    parts = []
    if m:
        if m.get("one_core_gflops"):
            parts.append(f"{m['one_core_gflops']:.1f} GFLOPS on one core (fastest of {m['one_core_n']} blocks)")
        if m.get("all_cores_gflops"):
            parts.append(f"{m['all_cores_gflops']:.1f} GFLOPS on {m['all_cores_threads']} threads "
                         f"(fastest of {m['all_cores_n']} blocks)")
        if m.get("effective_clock_hz"):
            parts.append(f"implied clock {m['effective_clock_hz'] / 1e9:.2f} GHz")
        if r.get("measured_in"):
            parts.append(f"by the survey's peakflops run {r['measured_in'][:8]}")
        t.add_row("Measured FMA peak", "; ".join(parts) or DASH)
    else:
        t.add_row("Measured FMA peak", why(r, "measured"))
    if r.get("warning"):
        t.add_row(Text("Warning", style="yellow bold"), Text(r["warning"], style="yellow"))
    g = f"{r['gflops']:.1f} GFLOPS" if r.get("gflops") else DASH
    t.add_row("% of peak basis", f"{r.get('basis')}: {g} ({r.get('basis_reason')})")
    parts: list = [t]
    if m and m.get("rows"):
        rows = Table(box=box.SIMPLE_HEAD, title="Measured by rmax-node peakflops (GFLOPS of n timed blocks; the peak is the maximum)",
                     title_justify="left")
        for col in ("ISA", "Precision", "Threads", "Median", "Min", "Max", "n", "Flops/cycle", "Implied clock (GHz)"):
            rows.add_column(col, justify="left" if col in ("ISA", "Precision") else "right")
        for x in m["rows"]:
            rows.add_row(x["isa"] + ("" if x["fused"] else " (mul+add)"), x["precision"], str(x["threads"]),
                         f"{x['median_gflops']:.1f}", f"{x['min_gflops']:.1f}", f"{x['max_gflops']:.1f}", str(x["n"]),
                         str(x["flops_per_cycle"] or DASH),
                         f"{x['effective_clock_hz'] / 1e9:.2f}" if x.get("effective_clock_hz") else DASH)
        parts.append(rows)
    return Group(*parts)


def node_line(inv: dict) -> str:
    """The node in one line (CPU, cores, memory, BLAS, MPI, the peak % of peak is taken against), as
    the survey's terminal summary shows it: `rmax info` and the report have the whole inventory."""
    c, m = inv.get("cpu") or {}, inv.get("memory") or {}
    ld = (inv.get("blas") or {}).get("loaded") or {}
    mpi = (inv.get("mpi") or {}).get("default") or {}
    rp = inv.get("rpeak") or {}
    parts = [f"{val(c, 'model')}, {plural(c.get('sockets'), 'socket')} {plural(c.get('cores'), 'core')} "
             f"({plural(c.get('threads'), 'thread')})", f"{val(m, 'total_bytes', gib)} memory",
             f"BLAS {ld['name']} {ld.get('version') or ''}".rstrip() if ld.get("name") else f"BLAS {why(ld, 'name')}",
             f"MPI {mpi.get('implementation')} {mpi.get('version') or ''}".rstrip() if mpi.get("implementation")
             else f"MPI {why(inv.get('mpi'), 'default')}",
             f"peak for % of peak {rp['gflops']:.1f} GFLOPS ({rp.get('basis')})" if rp.get("gflops")
             else f"no peak for % of peak ({rp.get('basis_reason') or why(rp, 'gflops')})"]
    return "; ".join(parts)


def render(inv: dict) -> Group:
    parts = [node_table(inv), cache_table(inv), nic_table(inv), blas_table(inv), rpeak_table(inv)]
    if inv.get("errors"):
        parts.append(Text("Sections that failed: " + "; ".join(f"{k}: {v}" for k, v in inv["errors"].items()),
                          style="red"))
    return Group(*parts)
