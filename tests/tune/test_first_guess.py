"""On a store with no DGEMM rate, the tuner's first guess at the HPL rate (which its budget check
and watchdog go by) comes from a short DGEMM measured then, not from a fixed GFLOPS a rank, and
that measurement is not stored (a command the budget check refuses stores nothing)."""

from rmax.store import open_store
from rmax.tune.facts import gather


def test_a_fresh_store_gets_a_measured_first_guess_and_keeps_nothing(db):
    with open_store() as store:
        facts = gather(store, 2, 1, 1, 128)
        assert store.list() == []
    assert facts["dgemm_source"].startswith("a short DGEMM run now (") and "GFLOPS per process" in \
        facts["dgemm_source"], facts
    assert facts["dgemm_bound_gflops"] > 0 and facts["rate_guess_gflops"] == 0.5 * facts["dgemm_bound_gflops"]
