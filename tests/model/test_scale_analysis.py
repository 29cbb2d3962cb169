"""What `rmax scale` fits for a user's command: the program's own region, or its launches less the
empty launch paired with each, with intervals that carry the launch's spread."""

import numpy as np
import pytest

from rmax.errors import RunFailed
from rmax.scale.analysis import Point, command_summary
from rmax.scale.region import region_seconds

TS, TP = 0.8, 2.4


def _points(seed: int, repeats: int = 3, region: bool = False) -> list[Point]:
    """A loaded launcher: start-up of 0.3 s plus a long tail (up to seconds) at every launch, the
    program's and the empty job's alike, on a program of known Ts and Tp."""
    rng = np.random.default_rng(seed)
    out = []
    for rep in range(repeats):
        for k in (1, 2, 4):
            launch = lambda: 0.3 + rng.lognormal(-1.0, 0.9) * k / 2   # noqa: E731
            work = TS + TP / k + abs(rng.normal(0, 0.01))
            out.append(Point(k, work + launch(), f"p{rep}{k}", work if region else None, launch(), f"l{rep}{k}"))
    return out


def _amdahl(summary: dict) -> dict:
    return next(f for f in summary["fit"]["fits"] if f["form"] == "amdahl")


def test_paired_launches_give_intervals_that_hold_the_truth():
    hits = 0
    for seed in range(40):
        s = command_summary(_points(seed), False, "true")
        f = _amdahl(s)
        hits += all(f["interval"][k][0] <= v <= f["interval"][k][1] for k, v in (("ts", TS), ("tp", TP)))
    assert hits >= 34          # a 95% interval for each: both hold together in most studies
    assert "empty job (true)" in s["time_statistic"] and set(s["launch_overhead_s"]) == {"1", "2", "4"}
    assert s["launch_overhead_s"]["4"]["runs"] == ["l04", "l14", "l24"]


def test_the_program_s_own_region_is_used_when_every_launch_printed_one():
    s = command_summary(_points(1, region=True), False, "true")
    f = _amdahl(s)
    assert "own region" in s["time_statistic"] and "warning" not in s
    assert f["params"]["ts"] == pytest.approx(TS, abs=0.03) and f["params"]["tp"] == pytest.approx(TP, abs=0.03)
    assert f["interval"]["ts"][0] <= TS <= f["interval"]["ts"][1]
    mixed = _points(1, region=True)
    mixed[0] = Point(1, mixed[0].wall_s, "p01", None, mixed[0].launch_s, "l01")
    s = command_summary(mixed, False, "true")
    assert "1 of 9" not in s["warning"] and "8 of 9 launches printed" in s["warning"]
    assert "empty job" in s["time_statistic"]


def test_a_program_no_longer_than_its_launch_is_fitted_with_the_launch_and_said():
    pts = [Point(k, 0.3, f"p{i}{k}", None, 0.35, f"l{i}{k}") for i in range(2) for k in (1, 2)]
    s = command_summary(pts, False, "true")
    assert "cannot be told from the launcher's" in s["warning"] and "time_statistic" not in s


@pytest.mark.parametrize("out,seconds", [
    ("hello\nrmax-region-seconds: 1.5\n", 1.5),
    ("rmax-region-seconds: 0.5\n  rmax-region-seconds: 2e-1\nrmax-region-seconds:0.75", 0.75),
    ("no region here\n", None),
])
def test_region_is_the_slowest_rank_s(out, seconds):
    assert region_seconds(out) == seconds


@pytest.mark.parametrize("value", ["abc", "-1", "nan", "inf", ""])
def test_a_malformed_region_fails_the_point(value):
    with pytest.raises(RunFailed, match="not a number of seconds"):
        region_seconds(f"rmax-region-seconds: {value}\n")
