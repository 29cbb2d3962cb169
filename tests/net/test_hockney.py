"""The Hockney fit recovers known alpha and beta from synthetic curves."""

import numpy as np
import pytest

from rmax.model.hockney import fit_hockney

SIZES = np.array([0, 1, 8, 64, 512, 4096, 32768, 262144, 1 << 20, 8 << 20], dtype=float)


@pytest.mark.parametrize("alpha,beta", [(0.25e-6, 12e9), (25e-6, 117e6), (2e-6, 1.2e9)])
def test_exact_curve(alpha, beta):
    fit = fit_hockney(SIZES, alpha + SIZES / beta)
    assert fit.alpha == pytest.approx(alpha, rel=1e-6)
    assert fit.beta == pytest.approx(beta, rel=1e-6)
    assert fit.n_half == pytest.approx(alpha * beta, rel=1e-6)
    assert fit.rms_rel_residual < 1e-9


def test_noisy_curve_within_its_uncertainty():
    rng = np.random.default_rng(7)
    alpha, beta = 3e-6, 5e9
    sizes = np.repeat(SIZES, 5)
    t = (alpha + sizes / beta) * (1 + 0.02 * rng.standard_normal(len(sizes)))
    fit = fit_hockney(sizes, t)
    assert abs(fit.alpha - alpha) < 4 * fit.alpha_err
    assert abs(fit.beta - beta) < 4 * fit.beta_err
    assert 0 < fit.alpha_err < 0.1 * alpha and 0 < fit.beta_err < 0.1 * beta
    assert fit.n_half_err > 0


def test_too_few_points_and_flat_data_are_refused():
    with pytest.raises(ValueError, match="three"):
        fit_hockney([1, 2], [1e-6, 2e-6])
    with pytest.raises(ValueError, match="bandwidth"):
        fit_hockney([1, 10, 100, 1000], [5e-6, 4e-6, 3e-6, 2e-6])


def test_intervals_and_a_good_fit_has_no_warning():
    rng = np.random.default_rng(11)
    alpha, beta = 3e-6, 5e9
    sizes = np.repeat(SIZES, 5)
    fit = fit_hockney(sizes, (alpha + sizes / beta) * (1 + 0.02 * rng.standard_normal(len(sizes))))
    assert fit.alpha_ci95[0] < alpha < fit.alpha_ci95[1]
    assert fit.beta_ci95[0] < beta < fit.beta_ci95[1]
    d = fit.as_dict()
    assert d["quality"] == "good" and d["warnings"] == [] and len(d["beta_ci95"]) == 2


def test_two_regimes_make_a_poor_fit_that_says_so():
    # an eager protocol below 64 KiB, a rendezvous with a 40 us handshake above: not one line
    t = np.where(SIZES < 65536, 0.3e-6 + SIZES / 10e9, 40e-6 + SIZES / 2e9)
    fit = fit_hockney(SIZES, t)
    assert fit.rms_rel_residual > 0.10
    assert not fit.good and any("poor fit" in w for w in fit.warnings)
    assert fit.as_dict()["quality"] == "poor"


def test_negative_alpha_is_implausible():
    sizes = np.array([1024, 4096, 16384, 65536, 262144], dtype=float)
    fit = fit_hockney(sizes, sizes / 1e9 - 0.5e-6)        # a line through a negative intercept
    assert fit.alpha < 0 and any("implausible alpha" in w for w in fit.warnings)
