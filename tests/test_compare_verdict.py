"""The verdict of one compared metric: Holm-adjusted significance and the minimum change."""

from rmax.compare import Change, _adjust


def _changes():
    # (a, b, p): a 3% change the test separates, a 40% one, and one without repeats
    return [Change("stream", "n1", "Triad", "GB/s", 15.3, 14.8, 3, 3, 1e-4, None),
            Change("stream", "n2", "Triad", "GB/s", 15.3, 9.2, 3, 3, 1e-4, None),
            Change("stream", "n3", "Triad", "GB/s", 15.3, 9.2, 1, 1, None, None)]


def test_a_separable_change_under_the_minimum_is_not_called_significant():
    small, large, undecided = changes = _changes()
    _adjust(changes, min_change=0.05)
    assert small.significant is False and small.small and small.p_adjusted < 0.05
    assert large.significant is True and not large.small
    assert undecided.significant is None and undecided.p_adjusted is None
    changes = _changes()
    _adjust(changes, min_change=0.0)
    assert changes[0].significant is True and not changes[0].small
