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
