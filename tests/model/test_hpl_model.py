"""The HPL time model's arithmetic, grids and sizes, and the calibration of its overhead term."""

import math

import pytest

from rmax.errors import RmaxError
from rmax.model import hpl_model as hm
from rmax.model.hpl_validate import summarize_errors, validate


def test_terms_by_hand():
    n, nb, p, q = 10000, 200, 2, 4
    alpha, beta, gamma = 1e-5, 1e8, 1e-10          # 10 us, 100 MB/s, 10 GFLOPS per process
    t = hm.hpl_terms(n, nb, p, q, alpha, beta, gamma)
    assert t.compute_s == pytest.approx(2 * 1e-10 * 1e12 / (3 * 8))
    beta_d = 8 / 1e8                                 # seconds per double
    assert t.bandwidth_s == pytest.approx(beta_d * 1e8 * (3 * 2 + 4) / (2 * 8))
    assert t.latency_s == pytest.approx(1e-5 * 1e4 * (201 * 1 + 2) / 200)
    assert t.overhead_s == 0
    assert hm.predict_hpl(n, nb, p, q, alpha, beta, gamma) == pytest.approx(t.total_s)
    # efficiency is the reference's 1 / (1 + 3 beta (3P+Q) / (4 gamma N) + 3 alpha PQ (...) / (2 N^2 NB gamma))
    ref_eff = 1 / (1 + 3 * beta_d * (3 * p + q) / (4 * gamma * n)
                   + 3 * alpha * p * q * ((nb + 1) * math.log2(p) + p) / (2 * n * n * nb * gamma))
    assert hm.efficiency(t) == pytest.approx(ref_eff)
    k = hm.hpl_terms(n, nb, p, q, alpha, beta, gamma, hm.Overhead("panel", 10))
    assert k.overhead_s == pytest.approx(10 * gamma * n * n * nb / (2 * p))
    c = hm.hpl_terms(n, nb, p, q, alpha, beta, gamma, hm.Overhead("column", 2e-5))
    assert c.overhead_s == pytest.approx(2e-5 * n)
    assert c.total_s == pytest.approx(t.total_s + 2e-5 * n)
    assert hm.hpl_flops(1000) == pytest.approx(2 / 3 * 1e9 + 1.5e6)


def test_bad_model_inputs():
    with pytest.raises(RmaxError, match="beta"):
        hm.predict_hpl(1000, 192, 1, 2, 1e-6, 0, 1e-11)
    with pytest.raises(RmaxError, match="alpha"):
        hm.predict_hpl(1000, 192, 1, 2, -1e-6, 1e9, 1e-11)
    with pytest.raises(RmaxError, match="grid"):
        hm.predict_hpl(1000, 192, 0, 2, 1e-6, 1e9, 1e-11)
    with pytest.raises(RmaxError, match="tau must be non-negative"):
        hm.Overhead("column", -1e-6)
    with pytest.raises(RmaxError, match="unknown overhead form"):
        hm.Overhead("fudge", 1.0)


def test_grids():
    assert hm.parse_grid("2x4") == (2, 4)
    assert hm.parse_grid(" 3 X 5 ") == (3, 5)
    for bad in ("2x", "x4", "2by4", "0x4", "-1x2", ""):
        with pytest.raises(RmaxError, match="grid"):
            hm.parse_grid(bad)
    assert hm.square_grid(8) == (2, 4)
    assert hm.square_grid(7) == (1, 7)
    assert hm.square_grid(16) == (4, 4)


def test_n_from_memory():
    gib24 = 24 * 2 ** 30
    n = hm.n_for_memory(gib24, 192, 1, 2)
    assert n % (192 * 2) == 0
    assert 8 * n * n <= 0.8 * gib24 < 8 * (n + 384) ** 2
    with pytest.raises(RmaxError):
        hm.n_for_memory(0, 192)


def _obs(overhead, noise=(0.0,) * 5):
    out = []
    for n, e in zip((1000, 2000, 4000, 6000, 8000), noise):
        g = 1e-11
        t = hm.predict_hpl(n, 192, 1, 2, 3e-7, 4e9, g, overhead) * (1 + e)
        out.append(hm.Observation(n, 192, 1, 2, t, 3e-7, 4e9, g))
    return out


@pytest.mark.parametrize("truth", [hm.Overhead("panel", 12.0), hm.Overhead("column", 1.5e-5)])
def test_calibration_recovers_the_form_and_its_coefficient(truth):
    cal = hm.calibrate(_obs(truth))
    assert cal.overhead.form == truth.form and cal.chosen_by == "median leave-one-out error"
    assert cal.overhead.value == pytest.approx(truth.value, rel=1e-9)
    assert cal.rms_rel_error < 1e-9 < cal.rms_rel_error_uncalibrated
    other = next(f for f in cal.fits.values() if f.overhead.form != truth.form)
    assert other.loo_median_abs_error > 0.01         # the wrong form cannot follow the N-dependence
    noisy = hm.calibrate(_obs(truth, (0.03, -0.02, 0.01, -0.03, 0.02)), forms=[truth.form])
    assert abs(noisy.overhead.value - truth.value) < 3 * noisy.stderr + 0.05 * truth.value
    with pytest.raises(RmaxError):
        hm.calibrate([])


def test_leave_one_out_validation():
    checks = validate(_obs(hm.Overhead("panel", 12.0)))
    assert all(abs(c.calibrated_error) < 1e-9 for c in checks)
    assert all(c.overhead["form"] == "panel" for c in checks)
    assert all(c.error < 0 for c in checks)           # the reference model alone is too optimistic
    s = summarize_errors(checks, 4000)
    assert s["calibrated"]["n"] == 3 and s["calibrated"]["max_abs"] < 1e-9


def test_one_preempted_run_does_not_choose_the_form():
    # Timing noise is one-sided: a run preempted once is much slower. With 7 runs of the
    # per-column truth, one at 40% over does not make the panel form look better.
    runs = []
    for n, e in zip((1000, 1500, 2000, 3000, 4000, 6000, 8000), (0, 0.4, 0, 0.02, 0, -0.01, 0)):
        g = 1e-11
        t = hm.predict_hpl(n, 192, 1, 2, 3e-7, 4e9, g, hm.Overhead("column", 1.5e-5)) * (1 + e)
        runs.append(hm.Observation(n, 192, 1, 2, t, 3e-7, 4e9, g))
    cal = hm.calibrate(runs)
    assert cal.overhead.form == "column"
    assert cal.fits["panel"].loo_median_abs_error > cal.fits["column"].loo_median_abs_error
