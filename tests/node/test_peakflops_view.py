"""peakflops read against the nominal Rpeak: the FMA-unit count a stored run implies."""

from rmax.bench import peakflops


def test_two_fma_units_are_implied_by_a_doubling_from_avx2_to_avx512(monkeypatch):
    import rmax.inventory.cpu as cpu

    monkeypatch.setattr(cpu, "collect_cpu", lambda: {"flags": ["sse2", "avx", "avx2", "fma", "avx512f"], "cores": 2,
                                                     "cpuinfo_mhz": 2600.0})
    summary = {"avx512/double/1": {"median": 96.0, "n": 9}, "avx512/double/2": {"median": 190.0, "n": 9},
               "avx2/double/1": {"median": 48.5, "n": 9}, "avx2/double/2": {"median": 96.0, "n": 9}}
    view = peakflops.rpeak_view(summary)
    assert view["fma_units"] == 2 and view["fma_units_source"] == "measured"
    assert abs(view["nominal_gflops"] - 2 * 2.6 * 32) < 1e-6

    summary["avx512/double/1"]["median"] = 50.0  # one 512-bit unit: no faster than AVX2 per core
    assert peakflops.rpeak_view(summary)["fma_units"] == 1


def test_quick_run_is_stored(db):
    rec = peakflops.run(quick=True, precision="double", isa="sse2")
    assert rec.status == "ok" and set(rec.summary) >= {"sse2/double/1"}


def test_a_wrong_answer_is_reported_not_a_rate():
    from node_helpers import records

    (rec,) = records("peakflops", "--isa", "sse2", "--precision", "double", "--threads", "1", "--budget", "0.05",
                     "--self-test-corrupt")
    assert rec["validated"] is False and rec["summary"] is None and rec["samples"] == []
    parsed = peakflops.parse([rec])
    assert parsed.status == "invalid" and "sse2/double/1" in parsed.error and parsed.summary == {}
