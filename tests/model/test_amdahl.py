"""The generalised Amdahl model, its fits and Karp-Flatt, on known values."""


import numpy as np
import pytest

from rmax.errors import RmaxError
from rmax.model.amdahl import AmdahlParams, best_n, parallel_time, relative_speedup, speedup
from rmax.model.amdahl_fit import fit_scaling
from rmax.model.karp_flatt import karp_flatt

RANKS = [1, 2, 4, 8, 16, 32, 64]


def test_brown_formula_by_hand():
    # S(N) = (Ts + Tp) / (Ts + N Tis + Tp/N + Tip) with Ts=10, Tp=1000, Tis=1, Tip=1 at N=10
    assert speedup(10, 10, 1000, 1, 1, "linear") == pytest.approx(1010 / (10 + 10 + 100 + 1))
    assert speedup(10, 10, 1000, 1, 1, "quadratic") == pytest.approx(1010 / (10 + 100 + 100 + 1))
    assert speedup(10, 10, 1000, 5, 1, "amdahl") == pytest.approx(1010 / (10 + 100 + 1))
    assert relative_speedup(1, 1, 2, 3, 4) == pytest.approx(1.0)


def test_best_n_is_the_minimum_of_t():
    for form in ("linear", "quadratic"):
        b = best_n(10, 10000, 1, 1, form)
        ns = np.arange(1, 1000)
        assert b.n == int(ns[np.argmin(parallel_time(ns, 10, 10000, 1, 1, form))])
    assert best_n(10, 10000, 1, 1, "linear").n_continuous == pytest.approx(100)
    assert best_n(10, 10000, 1, 1, "linear", max_n=64).n == 64
    assert best_n(10, 100, 0, 0, "amdahl").n is None


def test_negative_times_are_refused():
    with pytest.raises(RmaxError, match="Tis"):
        AmdahlParams(1, 2, -1)
    with pytest.raises(RmaxError):
        AmdahlParams(0, 0)


def test_karp_flatt_known_values():
    # Pure Amdahl with serial fraction f: e(p) = f at every p.
    f = 0.05
    for p in (2, 4, 16, 100):
        s = 1 / (f + (1 - f) / p)
        assert karp_flatt(s, p) == pytest.approx(f)
    assert karp_flatt(4.0, 4) == pytest.approx(0.0)       # perfect speedup: nothing serial
    assert karp_flatt(1.0, 2) == pytest.approx(1.0)       # no speedup: all serial
    assert karp_flatt(1.0, 1) is None


def _synthetic(form, tis, repeats=5, noise=0.02, seed=1):
    rng = np.random.default_rng(seed)
    n = np.repeat(RANKS, repeats).astype(float)
    t = parallel_time(n, 2.0, 100.0, tis, 0.0, form) * (1 + noise * rng.standard_normal(len(n)))
    return n, t


@pytest.mark.parametrize("form,tis", [("linear", 0.5), ("quadratic", 0.02), ("amdahl", 0.0)])
def test_fit_recovers_parameters_and_picks_the_form(form, tis):
    n, t = _synthetic(form, tis)
    sel = fit_scaling(n, t)
    fit = sel.chosen
    assert fit.form == form, sel.reason
    truth = {"ts": 2.0, "tp": 100.0, "tis": tis}
    for k, v in fit.params.items():
        # within 4 standard errors (and the errors are honest, not huge)
        assert abs(v - truth[k]) <= 4 * fit.stderr[k] + 1e-9, (k, v, fit.stderr[k])
        assert fit.stderr[k] < 0.2 * max(truth[k], 1.0)
    assert fit.r2 > 0.99
    assert 0.4 < fit.chi2_red < 2.5        # the misfit matches the scatter of the repeats
    if form != "amdahl":
        expected = best_n(2.0, 100.0, tis, 0.0, form).n_continuous
        assert abs(fit.best.n_continuous - expected) < 4 * fit.best_n_stderr + 0.5


def test_fit_without_repeats_and_with_too_few_ranks():
    n = np.array([1.0, 2.0, 4.0, 8.0])
    t = parallel_time(n, 1.0, 50.0, 0.2, 0, "linear")
    sel = fit_scaling(n, t, forms=("linear",))
    assert sel.chosen.params["tp"] == pytest.approx(50.0, rel=1e-6)
    assert "assumed" in sel.chosen.sigma_source
    two = fit_scaling([1, 1, 2, 2], [10.0, 10.2, 5.5, 5.6])
    assert two.chosen.form == "amdahl"
    assert "linear" in two.skipped and "distinct" in two.skipped["linear"]
    # two rank counts, two parameters: the curve goes through both means, so its goodness of fit is no test
    assert two.chosen.saturated and two.chosen.r2 is None and two.chosen.chi2_red is None
    assert not sel.chosen.saturated


def test_fit_refuses_bad_times():
    with pytest.raises(RmaxError):
        fit_scaling([1, 2], [1.0, -2.0])
