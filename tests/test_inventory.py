"""Node inventory: parsers on text captured from a KVM guest, the Rpeak
arithmetic as pure functions, and the real collect() against the JSON schema."""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys

import jsonschema
import pytest

import rmax.inventory as inventory
from rmax.inventory import caches, cpu, memory, nics, numa, probe, rpeak, software

SCHEMA = inventory.schema()

# --- captured on a 2-core KVM guest running Debian 12 --------------------------------------------

CPUINFO = """\
processor	: 0
vendor_id	: GenuineIntel
cpu family	: 6
model		: 207
model name	: Intel(R) Xeon(R) Processor
stepping	: 2
microcode	: 0x1
cpu MHz		: 2300.000
cache size	: 266240 KB
physical id	: 0
siblings	: 2
core id		: 0
cpu cores	: 2
flags		: fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse sse2 ss ht syscall nx pdpe1gb rdtscp lm constant_tsc rep_good nopl xtopology nonstop_tsc cpuid tsc_known_freq pni pclmulqdq ssse3 fma cx16 pcid sse4_1 sse4_2 x2apic movbe popcnt tsc_deadline_timer aes xsave avx f16c rdrand hypervisor lahf_lm abm 3dnowprefetch cpuid_fault fsgsbase tsc_adjust bmi1 hle avx2 smep bmi2 erms invpcid rtm avx512f avx512dq rdseed adx smap avx512ifma clflushopt clwb avx512cd sha_ni avx512bw avx512vl xsaveopt xsavec xgetbv1 xsaves avx_vnni avx512_bf16 arat avx512vbmi umip avx512_vbmi2 gfni vaes vpclmulqdq avx512_vnni avx512_bitalg avx512_vpopcntdq rdpid cldemote movdiri movdir64b fsrm serialize tsxldtrk avx512_fp16 arch_capabilities
bogomips	: 4600.00

processor	: 1
vendor_id	: GenuineIntel
cpu family	: 6
model		: 207
model name	: Intel(R) Xeon(R) Processor
cpu MHz		: 2300.000
physical id	: 0
core id		: 1
flags		: fpu sse2 avx avx2 fma avx512f hypervisor
"""

MEMINFO = """\
MemTotal:       24684092 kB
MemFree:        23808324 kB
MemAvailable:   24340388 kB
Buffers:            6180 kB
HugePages_Total:       0
Hugepagesize:       2048 kB
"""

NODE_MEMINFO = """\
Node 0 MemTotal:        4810964 kB
Node 0 MemFree:         3935248 kB
Node 0 MemUsed:          971436 kB
"""

ETHTOOL_C = """\
Coalesce parameters for eth0:
Adaptive RX: off  TX: n/a
stats-block-usecs: n/a
sample-interval: n/a
pkt-rate-low: n/a
pkt-rate-high: n/a

rx-usecs: 0
rx-frames: 1
rx-usecs-irq: n/a
rx-frames-irq: n/a

tx-usecs: 0
tx-frames: 1
tx-usecs-irq: n/a
tx-frames-irq: n/a

CQE mode RX: n/a  TX: n/a
"""

ETHTOOL_I = """\
driver: virtio_net
version: 1.0.0
firmware-version: 
bus-info: 0000:00:03.0
supports-statistics: yes
"""

HWLOC_XML = """\
<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE topology SYSTEM "hwloc2.dtd">
<topology version="2.0">
  <object type="Machine" os_index="0" cpuset="0x00000003">
    <object type="Package" os_index="0" cpuset="0x00000003">
      <object type="L3Cache" os_index="0" cpuset="0x00000003" cache_size="272629760" depth="3" cache_linesize="64" cache_associativity="20" cache_type="0">
        <object type="L2Cache" os_index="0" cpuset="0x00000001" cache_size="2097152" depth="2" cache_linesize="64" cache_associativity="16" cache_type="0">
          <object type="L1Cache" os_index="0" cpuset="0x00000001" cache_size="49152" depth="1" cache_linesize="64" cache_associativity="12" cache_type="1">
            <object type="L1iCache" os_index="0" cpuset="0x00000001" cache_size="32768" depth="1" cache_linesize="64" cache_associativity="8" cache_type="2">
              <object type="Core" os_index="0" cpuset="0x00000001"><object type="PU" os_index="0"/></object>
            </object>
          </object>
        </object>
        <object type="L2Cache" os_index="1" cpuset="0x00000002" cache_size="2097152" depth="2" cache_linesize="64" cache_associativity="16" cache_type="0">
          <object type="L1Cache" os_index="1" cpuset="0x00000002" cache_size="49152" depth="1" cache_linesize="64" cache_associativity="12" cache_type="1">
            <object type="L1iCache" os_index="1" cpuset="0x00000002" cache_size="32768" depth="1" cache_linesize="64" cache_associativity="8" cache_type="2">
              <object type="Core" os_index="1" cpuset="0x00000002"><object type="PU" os_index="1"/></object>
            </object>
          </object>
        </object>
      </object>
    </object>
  </object>
</topology>
"""

# sysfs /sys/devices/system/cpu/cpu{0,1}/cache/index{0..3}: level, type, size, ways, line, sets, shared_cpu_list
SYSFS_CACHES = {
    0: [("1", "Data", "48K", "12", "64", "64", "0"), ("1", "Instruction", "32K", "8", "64", "64", "0"),
        ("2", "Unified", "2048K", "16", "64", "2048", "0"), ("3", "Unified", "266240K", "20", "64", "212992", "0-1")],
    1: [("1", "Data", "48K", "12", "64", "64", "1"), ("1", "Instruction", "32K", "8", "64", "64", "1"),
        ("2", "Unified", "2048K", "16", "64", "2048", "1"), ("3", "Unified", "266240K", "20", "64", "212992", "0-1")],
}

OPENMPI_VERSION = "mpirun (Open MPI) 4.1.4\n\nReport bugs to http://www.open-mpi.org/community/help/\n"
MPICH_VERSION = """\
HYDRA build details:
    Version:                                 4.0.2
    Release Date:                            Thu Apr  7 12:34:45 CDT 2022
"""
GCC_VERSION = "gcc (Debian 12.2.0-14+deb12u1) 12.2.0\nCopyright (C) 2022 Free Software Foundation, Inc.\n"
CLANG_VERSION = "Debian clang version 14.0.6\nTarget: x86_64-pc-linux-gnu\n"

PEAKFLOPS_LINES = (
    '{"schema":"rmax.peakflops/1","isa":"avx512","precision":"double","threads":1,"lanes":8,"fused":true,'
    '"chains":12,"iterations":9069287,"unit":"GFLOPS","validated":true,"target_met":true,"samples":[86.7,87.2,'
    '87.4,87.6,87.8],"summary":{"n":5,"min":86.7,"median":87.4,"mean":87.3,"sd":0.41,"max":87.8,'
    '"ci95":[86.8,87.8]}}\n'
    '{"schema":"rmax.peakflops/1","isa":"avx512","precision":"double","threads":2,"lanes":8,"fused":true,"validated":true,'
    '"summary":{"n":5,"min":172.3,"median":173.5,"mean":173.6,"sd":0.95,"max":174.8,"ci95":[172.5,174.8]}}\n'
    '{"schema":"rmax.peakflops/1","isa":"avx2","precision":"double","threads":1,"lanes":4,"fused":true,"validated":true,'
    '"summary":{"n":5,"min":47.2,"median":47.25,"mean":47.2,"sd":0.04,"max":47.3,"ci95":[47.19,47.30]}}\n'
    '{"schema":"rmax.peakflops/1","isa":"avx2","precision":"double","threads":2,"lanes":4,"fused":true,"validated":true,'
    '"summary":{"n":15,"min":80.7,"median":92.5,"mean":90.9,"sd":4.2,"max":93.9,"ci95":[88.6,93.2]}}\n'
    '{"schema":"rmax.peakflops/1","isa":"sse2","precision":"double","threads":1,"lanes":2,"fused":false,"validated":true,'
    '"summary":{"n":5,"min":15.5,"median":15.7,"mean":15.6,"sd":0.1,"max":15.7,"ci95":[15.5,15.8]}}\n'
)


# --- parsers -------------------------------------------------------------------------------------

def test_cpuinfo_parser_and_isa():
    blocks = cpu.parse_cpuinfo(CPUINFO)
    assert len(blocks) == 2
    assert blocks[0]["model name"] == "Intel(R) Xeon(R) Processor"
    assert blocks[0]["cpu MHz"] == "2300.000"
    isa = cpu.isa_list(set(blocks[0]["flags"].split()))
    assert isa[:3] == ["SSE2", "SSE3", "SSSE3"]  # 'pni' is SSE3, named once
    assert {"AVX", "FMA", "AVX2", "AVX-512F", "AVX-512DQ", "AVX-512BW", "AVX-512VL", "AVX-512FP16"} <= set(isa)
    topo = cpu.topology_from_cpuinfo(blocks)
    assert (topo["sockets"], topo["cores"], topo["threads"]) == (1, 2, 2)


def test_model_name_clock():
    assert cpu.model_name_ghz("Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz") == 2.4
    assert cpu.model_name_ghz("Intel(R) Xeon(R) Processor") is None
    assert cpu.model_name_ghz(None) is None


def test_sysfs_caches(tmp_path):
    keys = ("level", "type", "size", "ways_of_associativity", "coherency_line_size", "number_of_sets",
            "shared_cpu_list")
    for c, entries in SYSFS_CACHES.items():
        for i, values in enumerate(entries):
            d = tmp_path / f"cpu{c}" / "cache" / f"index{i}"
            d.mkdir(parents=True)
            for k, v in zip(keys, values):
                (d / k).write_text(v + "\n")
    levels = caches.read_sysfs_caches(root=str(tmp_path), cpus=[0, 1])
    by = {(e["level"], e["type"]): e for e in levels}
    assert by[(1, "Data")]["size_bytes"] == 48 * 1024 and by[(1, "Data")]["instances"] == 2
    assert by[(3, "Unified")]["size_bytes"] == 260 * 2**20 and by[(3, "Unified")]["instances"] == 1
    assert by[(3, "Unified")]["shared_cpu_lists"] == ["0-1"]
    hw = caches.parse_hwloc_xml(HWLOC_XML)
    assert caches.cross_check(levels, hw) == []
    hw[0]["size_bytes"] *= 2
    assert caches.cross_check(levels, hw) == ["L1 Data size_bytes: sysfs 49152, hwloc 98304"]
    assert caches.cross_check(levels, None) is None


def test_cache_size_units():
    assert caches.parse_size("48K") == 49152
    assert caches.parse_size("266240K") == 272629760
    assert caches.parse_size("2M") == 2 * 2**20
    assert caches.parse_size("") is None and caches.parse_size("junk") is None


def test_meminfo_and_numa():
    m = memory.parse_meminfo(MEMINFO)
    assert m["MemTotal"] == 24684092 * 1024
    assert m["MemAvailable"] == 24340388 * 1024
    assert m["HugePages_Total"] == 0  # a count, not kB
    assert numa.parse_node_meminfo(NODE_MEMINFO)["MemTotal"] == 4810964 * 1024
    assert probe.parse_cpulist("0-3,8,10-11") == [0, 1, 2, 3, 8, 10, 11]
    assert probe.parse_cpulist("0-1\n") == [0, 1]


def test_ethtool_parsers():
    co = nics.parse_ethtool_coalesce(ETHTOOL_C)
    assert co == {"adaptive-rx": "off", "rx-usecs": 0, "rx-frames": 1, "tx-usecs": 0, "tx-frames": 1}
    info = nics.parse_ethtool_info(ETHTOOL_I)
    assert info["driver"] == "virtio_net" and info["bus-info"] == "0000:00:03.0"
    assert "firmware-version" not in info


def test_link_speed_unknown_is_a_reason(tmp_path):
    (tmp_path / "eth0").mkdir()
    (tmp_path / "eth0" / "speed").write_text("-1\n")
    speed, why = nics.link_speed("eth0", root=str(tmp_path))
    assert speed is None and "-1" in why
    (tmp_path / "eth0" / "speed").write_text("25000\n")
    assert nics.link_speed("eth0", root=str(tmp_path)) == (25000, None)


def test_mpi_and_compiler_versions():
    assert software.parse_mpi_version(OPENMPI_VERSION) == ("Open MPI", "4.1.4")
    assert software.parse_mpi_version(MPICH_VERSION) == ("MPICH", "4.0.2")
    assert software.parse_mpi_version("something else") == (None, None)
    assert software.parse_compiler_version(GCC_VERSION) == ("gcc", "12.2.0")
    assert software.parse_compiler_version(CLANG_VERSION) == ("clang", "14.0.6")


def test_missing_tool_is_a_reason_not_a_traceback():
    out, why = probe.run(["rmax-no-such-tool", "--version"])
    assert out is None and "not found" in why
    out, why = probe.run(["sleep", "5"], timeout=0.2)
    assert out is None and "timed out" in why
    out, why = probe.run(["false"])
    assert out is None and "exited with 1" in why


# --- Rpeak arithmetic ----------------------------------------------------------------------------

@pytest.mark.parametrize("isa,units,fpc", [("sse2", None, 4), ("avx", None, 8), ("avx2", None, 16),
                                           ("avx512", 1, 16), ("avx512", 2, 32)])
def test_flops_per_cycle(isa, units, fpc):
    assert rpeak.dp_flops_per_cycle(isa, units) == fpc


def test_widest_isa_and_units():
    assert rpeak.widest_isa({"sse2", "avx", "avx2", "fma", "avx512f"}) == "avx512"
    assert rpeak.widest_isa({"sse2", "avx", "avx2"}) == "avx"  # AVX2 without FMA counts as AVX
    assert rpeak.widest_isa({"sse2"}) == "sse2"
    assert rpeak.widest_isa(set()) is None
    assert rpeak.fma_units_from_ratio(87.4 / 47.25) == 2
    assert rpeak.fma_units_from_ratio(1.02) == 1
    assert rpeak.fma_units_from_ratio(0.3) is None


def test_nominal_and_clock_choice():
    assert rpeak.nominal_gflops(2, 2.3e9, 32) == pytest.approx(147.2)
    assert rpeak.nominal_gflops(2, 2.6e9, 32) == pytest.approx(166.4)  # 2 cores x 2.6 GHz x 32 flop/cycle
    assert rpeak.choose_clock(3.5e9, 2.4, 2300.0) == (3.5e9, "cpufreq cpuinfo_max_freq")
    assert rpeak.choose_clock(None, 2.4, 2300.0) == (2.4e9, "model name '@ x.xxGHz'")
    assert rpeak.choose_clock(None, None, 2300.0) == (2.3e9, "/proc/cpuinfo 'cpu MHz'")
    assert rpeak.choose_clock(None, None, None) == (None, None)


def _cpu(**kw):
    base = {"cores": 2, "flags": ["sse2", "avx", "avx2", "fma", "avx512f"], "cpuinfo_mhz": 2300.0,
            "cpufreq_max_hz": None, "model_name_ghz": None, "hypervisor_flag": True}
    base.update(kw)
    return base


def test_rpeak_measured_exceeds_nominal():
    rows = rpeak.parse_peakflops(PEAKFLOPS_LINES)
    assert [(r.isa, r.threads) for r in rows][:2] == [("avx512", 1), ("avx512", 2)]
    r = rpeak.derive(_cpu(), rows, None)
    assert r["fma_units"] == 2 and r["fma_units_source"] == "measured"
    assert r["flops_per_cycle"] == 32
    assert r["nominal_gflops"] == pytest.approx(147.2)
    assert "2 cores x 2.300 GHz" in r["formula"] and "cpu MHz" in r["formula"]
    # a peak is the fastest block (interference only lowers one); the FMA units from the medians
    assert r["measured"]["one_core_gflops"] == 87.8 and r["measured"]["all_cores_gflops"] == 174.8
    assert r["measured"]["effective_clock_hz"] == pytest.approx(87.8e9 / 32)
    assert "87.4 / 47.2 = 1.85" in r["fma_units_detail"]
    avx2 = next(x for x in r["measured"]["rows"] if x["isa"] == "avx2" and x["threads"] == 1)
    assert avx2["effective_clock_hz"] == pytest.approx(47.3e9 / 16)  # ~2.96 GHz, above the 2.3 shown
    assert not r["trustworthy"]
    assert r["warning"].startswith("nominal Rpeak is not trustworthy here: ")
    assert r["basis"] == "measured" and r["gflops"] == 174.8


ONE_UNIT = (PEAKFLOPS_LINES.replace('"median":87.4', '"median":47.0').replace('"max":87.8', '"max":47.4')
            .replace('"ci95":[86.8,87.8]', '"ci95":[46.8,47.3]')
            .replace('"min":172.3,"median":173.5,"mean":173.6,"sd":0.95,"max":174.8,"ci95":[172.5,174.8]',
                     '"min":92.3,"median":93.5,"mean":93.6,"sd":0.95,"max":94.8,"ci95":[92.5,94.8]'))


def test_rpeak_one_fma_unit_measured():
    rows = rpeak.parse_peakflops(ONE_UNIT)
    r = rpeak.derive(_cpu(hypervisor_flag=False, cpufreq_max_hz=3.0e9), rows, None)
    assert r["fma_units"] == 1 and r["flops_per_cycle"] == 16 and r["fma_units_source"] == "measured"
    assert r["nominal_gflops"] == pytest.approx(2 * 3.0 * 16)
    assert "95% interval of the ratio 0.99-1.00" in r["fma_units_detail"]


@pytest.mark.parametrize("change", [
    # a busy stretch during the AVX2 row: medians say 2 units, the fastest blocks say 1
    ('"min":47.2,"median":47.25,"mean":47.2,"sd":0.04,"max":47.3', '"min":40.0,"median":44.0,"mean":44.0,"sd":9,"max":88.0'),
    # medians about 1.5 apart with wide intervals: neither 1 nor 2
    ('"ci95":[86.8,87.8]', '"ci95":[50.0,95.0]'),
])
def test_rpeak_fma_units_undecided_by_noisy_rows_are_not_assumed(change):
    rows = rpeak.parse_peakflops(PEAKFLOPS_LINES.replace(*change))
    r = rpeak.derive(_cpu(hypervisor_flag=False, cpufreq_max_hz=3.0e9), rows, None)
    assert r["fma_units"] is None and r["fma_units_source"] == "not determined"
    assert r["fma_units_detail"].startswith("not determined: AVX-512 / AVX2 one-core DP FMA rate")
    assert r["nominal_gflops"] is None and "FMA-unit count is not determined" in r["reasons"]["nominal_gflops"]
    # % of peak falls back on what was measured, and says so
    assert r["basis"] == "measured" and r["gflops"] == 174.8
    assert all(x["flops_per_cycle"] is None for x in r["measured"]["rows"] if x["isa"] == "avx512")


def test_rpeak_units_not_assumed_when_not_measured():
    r = rpeak.derive(_cpu(hypervisor_flag=False, cpufreq_max_hz=3.0e9), None, "not measured (--no-measure)")
    assert r["fma_units"] is None and r["fma_units_source"] == "not determined"
    assert "--no-measure" in r["fma_units_detail"] and "--no-measure" in r["reasons"]["fma_units"]
    assert r["nominal_gflops"] is None and r["gflops"] is None
    assert "no peak is known" in r["basis_reason"]
    assert r["measured"] is None and "--no-measure" in r["reasons"]["measured"]
    # without AVX-512 nothing needs measuring
    r = rpeak.derive(_cpu(flags=["sse2", "avx", "avx2", "fma"], hypervisor_flag=False, cpufreq_max_hz=3.0e9),
                     None, "not measured (--no-measure)")
    assert r["fma_units"] is None and r["nominal_gflops"] == pytest.approx(96.0) and r["basis"] == "nominal"


def test_rpeak_single_precision_rows_count_twice_the_flops_per_cycle():
    sp = ('\n{"schema":"rmax.peakflops/1","isa":"avx2","precision":"single","threads":1,"lanes":8,"fused":true,'
          '"validated":true,"summary":{"n":5,"min":94.0,"median":94.5,"mean":94.5,"sd":0.1,"max":94.6,"ci95":[94.4,94.6]}}')
    r = rpeak.derive(_cpu(), rpeak.parse_peakflops(PEAKFLOPS_LINES + sp), None)
    dp, single = (next(x for x in r["measured"]["rows"] if x["isa"] == "avx2" and x["threads"] == 1
                       and x["precision"] == p) for p in ("double", "single"))
    assert single["flops_per_cycle"] == 32 and dp["flops_per_cycle"] == 16
    assert single["effective_clock_hz"] == pytest.approx(dp["effective_clock_hz"], rel=0.01)


def test_rpeak_warning_names_the_figure_that_exceeds_nominal():
    # one thread only: the "all-core" row is one core, above its per-core share but below the node's nominal
    one = "\n".join(line for line in PEAKFLOPS_LINES.splitlines() if '"threads":2' not in line)
    r = rpeak.derive(_cpu(), rpeak.parse_peakflops(one), None)
    assert "one core's measured AVX-512 FMA peak exceeds its share: 87.8 GFLOPS" in r["warning"]
    assert "73.6 nominal per core" in r["warning"]
    # the nominal clock is proven low: 2 x the one core's peak is the largest peak known
    assert r["basis"] == "measured per core" and r["gflops"] == pytest.approx(2 * 87.8)
    assert "ran on 1 thread for 2 cores" in r["basis_reason"]


def test_a_disturbed_all_core_row_does_not_lower_the_peak_below_what_one_core_proves():
    # Zen 4 in a VM, 'cpu MHz' 2.6 GHz: one core reached 58.7 (3.67 GHz), the 2-thread row only 64.6
    # on a busy machine; nominal 83.1 would put HPL at 24.8 % of a peak the cores are known to beat
    rows = _rows(("avx512", 1, 58.0, 58.7), ("avx512", 2, 60.0, 64.6), ("avx2", 1, 57.5, 58.0), ("avx2", 2, 60, 63.0))
    r = rpeak.derive(_cpu(cpuinfo_mhz=2596.15, hypervisor_flag=False), rows, None)
    assert r["nominal_gflops"] == pytest.approx(83.08, abs=0.01) and not r["trustworthy"]
    assert r["basis"] == "measured per core" and r["gflops"] == pytest.approx(117.4)
    assert "55% of 2 x one core's" in r["basis_reason"] and "nominal Rpeak 83.1" in r["basis_reason"]
    # undisturbed, the all-core row itself is the peak
    rows[1] = _rows(("avx512", 2, 115.0, 116.7))[0]
    r = rpeak.derive(_cpu(cpuinfo_mhz=2596.15, hypervisor_flag=False), rows, None)
    assert r["basis"] == "measured" and r["gflops"] == 116.7


def test_a_measurement_without_the_widest_isa_is_no_peak():
    # SSE2 alone on an AVX-512 CPU: far below the peak, so % of peak against it would be flattered
    rows = _rows(("sse2", 1, 13.0, 13.4), ("sse2", 2, 26.0, 26.7))
    r = rpeak.derive(_cpu(hypervisor_flag=False, cpufreq_max_hz=3.0e9), rows, None)
    assert r["nominal_gflops"] is None and r["gflops"] is None
    assert "did not include AVX-512" in r["basis_reason"]
    # with the nominal Rpeak known (no AVX-512), the nominal figure stands
    r = rpeak.derive(_cpu(flags=["sse2", "avx", "avx2", "fma"], hypervisor_flag=False, cpufreq_max_hz=3.0e9), rows, None)
    assert r["basis"] == "nominal" and r["gflops"] == pytest.approx(96.0)


def test_rpeak_vm_without_cpufreq_is_not_trusted():
    r = rpeak.derive(_cpu(), None, "not measured (--no-measure)")
    assert not r["trustworthy"] and "hypervisor" in r["warning"]
    assert r["basis"] == "nominal" and "--no-measure" in r["basis_reason"]


def test_rpeak_unknown_clock_is_null_with_reason():
    r = rpeak.derive(_cpu(cpuinfo_mhz=None, hypervisor_flag=False), None, "x")
    assert r["nominal_gflops"] is None and "clock" in r["reasons"]["nominal_gflops"]


# --- the real thing ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def inv_quick():
    return inventory.collect(measure=False)


def _validate(inv):
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    jsonschema.Draft202012Validator(SCHEMA, format_checker=jsonschema.FormatChecker()).validate(
        json.loads(json.dumps(inv)))


def test_collect_no_measure_matches_schema():
    inv = inventory.collect(measure=False)
    _validate(inv)
    assert inv["errors"] == {}
    assert inv["rpeak"]["measured"] is None
    assert inv["cpu"]["cores"] >= 1 and inv["memory"]["total_bytes"] > 0


def test_collect_measured_matches_schema():
    inv = inventory.collect(measure=True)
    _validate(inv)
    r = inv["rpeak"]
    if r["measured"] is None:  # no rmax-node built: said, not guessed
        assert r["reasons"]["measured"]
    else:
        assert r["measured"]["one_core_gflops"] > 0
        if "avx512f" in inv["cpu"]["flags"] and r["fma_units"] is None:
            # a busy machine may leave the unit count undecided: then it says why, and no clock is implied
            assert r["reasons"]["fma_units"].startswith("not determined")
            assert r["nominal_gflops"] is None
            # a clock is implied only by the fastest one-core row when it is not AVX-512's (units unknown)
            one = max((x for x in r["measured"]["rows"] if x["threads"] == 1 and x["precision"] == "double"
                       and x["fused"]), key=lambda x: x["max_gflops"])
            assert (r["measured"]["effective_clock_hz"] is None) == (one["isa"] == "avx512")
        else:
            assert r["fma_units_source"] == ("measured" if r["fma_units"] else None)
            assert r["measured"]["effective_clock_hz"] > 0


def test_null_fields_have_reasons(inv_quick):
    def walk(section):
        if isinstance(section, dict) and "reasons" in section:
            for k, v in section.items():
                if v is None and k != "reasons":
                    assert k in section["reasons"], (k, section)
        if isinstance(section, dict):
            for v in section.values():
                walk(v)
        elif isinstance(section, list):
            for v in section:
                walk(v)
    walk(inv_quick)


def test_fingerprint_ignores_volatile_facts(inv_quick):
    fp = inventory.fingerprint(inv_quick)
    assert len(fp) == 16 and int(fp, 16) >= 0
    assert fp == inv_quick["fingerprint"]
    other = copy.deepcopy(inv_quick)
    other["memory"]["available_bytes"] = 1
    other["rpeak"]["measured"] = {"one_core_gflops": 1.0}
    other["collected_at"] = "1970-01-01T00:00:00+00:00"
    assert inventory.fingerprint(other) == fp
    other["cpu"]["model"] = "Some Other CPU"
    assert inventory.fingerprint(other) != fp
    assert inventory.collect(measure=False)["fingerprint"] == fp  # same node, same answer


def _rows(*specs):
    """PeakRows (isa, threads, median, max) with tight intervals."""
    return [rpeak.PeakRow(isa, "double", t, True, med, med - 0.5, top, med, 5, [med - 0.3, med + 0.3])
            for isa, t, med, top in specs]


def test_the_measured_peak_is_no_lower_than_any_row_and_one_slowed_row_decides_nothing():
    # a Zen 4-like node under load: AVX-512 slowed on 2 threads, AVX2 slowed on one core
    rows = _rows(("avx512", 1, 56.6, 56.8), ("avx512", 2, 50.1, 51.3), ("avx2", 1, 32.1, 32.3), ("avx2", 2, 115.0, 116.9))
    r = rpeak.derive(_cpu(hypervisor_flag=False, cpufreq_max_hz=3.6e9), rows, None)
    # one core says 2 units (56.8 / 32.3), the AVX2 2-thread row says 58 GFLOPS per core: undecided, not 2
    assert r["fma_units"] is None and "fastest per core over all rows 0.97" in r["fma_units_detail"]
    # the peak is the fastest row of the run, whatever its ISA: no kernel beats it
    m = r["measured"]
    assert m["all_cores_gflops"] == 116.9 and m["isa"] == "avx2" and m["one_core_gflops"] == 56.8
    assert r["basis"] == "measured" and r["gflops"] == 116.9
    from rmax.families.peakflops import _peak_row
    assert _peak_row(rows) == 3


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"), reason="a network namespace needs root")
def test_interfaces_are_this_network_namespaces_not_sysfs_mounts():
    """In a namespace entered for its network only (a virtual cluster's node), /sys/class/net still
    shows the host's interfaces: the inventory must list the namespace's own (here only lo)."""
    code = ("import json; from rmax.inventory import nics; "
            "names, collect = nics.interfaces(); print(json.dumps([nics.sysfs_is_ours(), names, collect('lo')]))")
    out = subprocess.run(["unshare", "--net", sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    ours, names, lo = json.loads(out.stdout)
    assert ours is False and names == ["lo"]
    assert lo["kind"] == "loopback" and lo["mtu"] == 65536 and lo["operstate"] in ("unknown", "down")


def test_the_schema_names_every_peak_basis():
    def find(node):
        if isinstance(node, dict) and "enum" in node.get("properties", {}).get("basis", {}):
            return node["properties"]["basis"]["enum"]
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else []
        return next((got for got in map(find, children) if got), None)

    assert tuple(find(SCHEMA)) == rpeak.BASES


def test_nodes_of_one_machine_read_its_software_once_per_survey(tmp_path, monkeypatch):
    from rmax.inventory import shared

    monkeypatch.setattr(shared.tempfile, "gettempdir", lambda: str(tmp_path))
    calls = []

    def read():
        calls.append(1)
        return {"mpi": {"default": None}}, {"blas": "OSError: boom"}

    first = shared.reuse("survey-a", read)
    assert first == ({"mpi": {"default": None}}, {"blas": "OSError: boom"}, os.uname().nodename)
    assert shared.reuse("survey-a", read) == first and len(calls) == 1      # the next node reuses it, named
    assert shared.reuse("survey-b", read) == first and len(calls) == 2      # another survey reads again
    monkeypatch.setenv("LD_LIBRARY_PATH", "/elsewhere")                     # another BLAS may load: read again
    shared.reuse("survey-a", read)
    assert len(calls) == 3
    folder = tmp_path / f"rmax-inventory-{os.getuid()}"
    assert folder.stat().st_mode & 0o777 == 0o700
    folder.chmod(0o755)                                                     # not private: each node reads its own
    shared.reuse("survey-a", read)
    assert len(calls) == 4


def test_a_survey_inventory_names_the_node_that_read_the_machine_sections(tmp_path, monkeypatch):
    from rmax.inventory import shared

    collect = sys.modules["rmax.inventory.collect"]   # the module: the package's `collect` is its function
    monkeypatch.setattr(shared.tempfile, "gettempdir", lambda: str(tmp_path))
    # this host's own interfaces are not what is tested (a virtual cluster's host has hundreds)
    monkeypatch.setattr(collect, "_nics", lambda: {"interfaces": [], "reasons": {"interfaces": "not read here"}})
    inv = shared.collect_node(False, "not measured here", survey="survey-c")
    _validate(inv)
    assert inv["machine_sections_read_on"] == os.uname().nodename and inv["mpi"] and inv["blas"]
    again = shared.collect_node(False, "not measured here", survey="survey-c")
    assert again["blas"] == inv["blas"] and again["fingerprint"] == inv["fingerprint"]


def test_rpeak_sse2_rows_above_nominal_doubt_it_without_a_clock():
    """Only mul+add (SSE2, no FMA) rows measured, beating the nominal peak of an SSE2-only CPU:
    the nominal is doubted, and no clock is inferred from rows that can use extra adders."""
    rows = [rpeak.PeakRow("sse2", "double", t, False, 30.0 * t, 29.0 * t, 31.0 * t, 30.0 * t, 20) for t in (1, 2)]
    r = rpeak.derive(_cpu(flags=["sse2"], hypervisor_flag=False, cpufreq_max_hz=3.0e9), rows, None)
    assert r["nominal_gflops"] == pytest.approx(2 * 3.0 * 4)
    assert r["measured"]["effective_clock_hz"] is None
    assert "SSE2 peak exceeds it: 62.0 GFLOPS" in r["warning"] and "GHz, not the" not in r["warning"]
