"""peakflops read against the nominal Rpeak: the FMA-unit count a stored run implies, the peak
(the fastest block) and the basis of % of peak, each figure read from its stored field."""

import json

import pytest

from rmax.families import get, run
from rmax.bench.view import resolve

AVX512_CPU = {"flags": ["sse2", "avx", "avx2", "fma", "avx512f"], "cores": 2, "cpuinfo_mhz": 2600.0}


def record(isa, threads, median, top, n=9):
    return {"schema": "rmax.peakflops/1", "isa": isa, "precision": "double", "threads": threads, "fused": True,
            "validated": True, "samples": [median] * n,
            "summary": {"n": n, "min": median - 1, "median": median, "mean": median, "sd": 0.5, "max": top,
                        "ci95": [median - 1, median + 1]}}


def test_two_fma_units_are_implied_by_a_doubling_from_avx2_to_avx512():
    fam = get("peakflops")
    recs = [record("avx512", 1, 96.0, 97.0), record("avx512", 2, 190.0, 193.0), record("avx2", 1, 48.5, 49.0),
            record("avx2", 2, 96.0, 97.5)]
    s = fam.parse(recs, AVX512_CPU).summary
    assert s.rpeak.fma_units == 2 and s.rpeak.fma_units_source == "measured"
    assert s.rpeak.nominal_gflops == pytest.approx(2 * 2.6 * 32)
    # the peak is the fastest block of the all-core run of the widest ISA
    assert s.results[s.peak_row].isa == "avx512" and s.results[s.peak_row].threads == 2
    figs = {f.role: f for f in fam.headline(s)}
    assert figs["peak"].value == 193.0 and figs["peak"].statistic == "maximum of 9 timed blocks"
    stored = json.loads(json.dumps(s.to_dict()))
    for f in figs.values():
        assert resolve(stored, f.path) * f.scale == f.value

    # one 512-bit unit: no faster than AVX2 per core, on one core and on all
    recs[0], recs[1] = record("avx512", 1, 50.0, 50.5), record("avx512", 2, 96.0, 97.0)
    assert fam.parse(recs, AVX512_CPU).summary.rpeak.fma_units == 1


def test_a_measured_peak_above_nominal_is_the_basis_and_the_same_field():
    fam = get("peakflops")
    recs = [record("avx512", 1, 96.0, 97.0), record("avx512", 2, 190.0, 200.0), record("avx2", 1, 48.5, 49.0)]
    s = fam.parse(recs, {**AVX512_CPU, "cpuinfo_mhz": 2000.0}).summary   # nominal 128 GFLOPS
    assert s.rpeak.basis == "measured" and not s.rpeak.trustworthy
    figs = {f.role: f for f in fam.headline(s)}
    assert figs["peak_basis"].path == figs["peak"].path and figs["peak_basis"].value == 200.0
    assert figs["rpeak_nominal"].value == pytest.approx(128.0)


def test_without_cpu_facts_the_peak_stands_alone():
    fam = get("peakflops")
    s = fam.parse([record("avx2", 1, 48.5, 49.0), record("avx2", 2, 96.0, 97.5)], None).summary
    assert s.rpeak is None and [f.role for f in fam.headline(s)] == ["peak"]


def test_quick_run_is_stored(db):
    fam = get("peakflops")
    rec = run(fam, fam.options(True, precision="double", isa="sse2"))
    assert rec.status == "ok" and rec.summary["schema"] == "rmax.peakflops/3"
    s = fam.load(rec)
    assert ("sse2", "double", 1) in {(r.isa, r.precision, r.threads) for r in s.results}
    assert rec.params["sample_time"] == 0.005 and rec.params["budget"] == 0.05


def test_a_wrong_answer_is_reported_not_a_rate():
    from node_helpers import records

    (rec,) = records("peakflops", "--isa", "sse2", "--precision", "double", "--threads", "1", "--budget", "0.05",
                     "--self-test-corrupt")
    assert rec["validated"] is False and rec["summary"] is None and rec["samples"] == []
    parsed = get("peakflops").parse([rec])
    assert parsed.status == "invalid" and "sse2/double/1" in parsed.error and parsed.summary.results == []


def test_an_all_core_peak_far_below_threads_times_one_core_is_pointed_out():
    """The 16-vCPU guest: 63.1 GFLOPS on one core, 702 on 16 (70% of 16 x 63.1)."""
    fam = get("peakflops")
    low = fam.parse([record("avx512", 1, 62.0, 63.1), record("avx512", 16, 650.0, 702.0)], None).summary
    (note,) = [n for n in fam.view(low).notes if "one-core" in n]
    assert note.startswith("avx512 double: 16 threads reached 702.0 GFLOPS, 70% of 16 x the one-core 63.1")
    fine = fam.parse([record("avx512", 1, 62.0, 63.1), record("avx512", 16, 900.0, 940.0)], None).summary
    assert not [n for n in fam.view(fine).notes if "one-core" in n]


def test_a_peakflops_run_of_the_older_schema_gives_no_peak_basis():
    """rmax.peakflops/2 chose its basis by an older rule (an SSE2-only rate could be "the peak"): its
    rows stay readable, but % of peak is not computed against it."""
    fam = get("peakflops")
    recs = [record("avx512", 1, 96.0, 97.0), record("avx512", 2, 190.0, 200.0), record("avx2", 1, 48.5, 49.0)]
    stored = fam.parse(recs, {**AVX512_CPU, "cpuinfo_mhz": 2000.0}).summary.to_dict()
    stored["schema"] = "rmax.peakflops/2"
    del stored["rpeak"]["gflops"]
    old = fam.Summary.load(stored)
    roles = {f.role for f in fam.headline(old)}
    assert "peak" in roles and "peak_basis" not in roles
