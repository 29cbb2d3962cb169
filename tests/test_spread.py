"""Survey figures across nodes: a node is flagged slow only when it stands out from the others, and a
figure measured on several nodes names its node."""

from rmax.survey.spread import _slow


def test_two_nodes_are_never_flagged():
    assert _slow({"a": 100.0, "b": 80.0}, lower_is_better=False) == []


def test_an_outlier_among_steady_nodes_is_flagged_and_noise_is_not():
    steady = {"a": 100.0, "b": 101.0, "c": 99.5, "d": 100.4}
    assert _slow({**steady, "e": 85.0}, lower_is_better=False) == ["e"]
    assert _slow({**steady, "e": 115.0}, lower_is_better=True) == ["e"]        # a latency: higher is worse
    assert _slow({**steady, "e": 115.0}, lower_is_better=False) == []         # faster is never slow
    # nodes that spread by 15 % among themselves: one 12 % below the median is within their spread
    noisy = {"a": 100.0, "b": 115.0, "c": 86.0, "d": 108.0, "e": 93.0}
    assert _slow({**noisy, "f": 87.0}, lower_is_better=False) == []


def test_a_headline_metric_measured_on_several_nodes_names_its_node():
    from rmax.survey.headline import shown_metric

    rows = [{"metric": "Measured FMA peak", "host": "n1"}, {"metric": "Measured FMA peak", "host": "n2"},
            {"metric": "HPL Rmax", "host": "n1"}]
    assert [shown_metric(r, rows) for r in rows] == ["Measured FMA peak on n1", "Measured FMA peak on n2", "HPL Rmax"]



def test_nodes_sharing_one_machine_are_shown_not_flagged(monkeypatch):
    import dataclasses

    from rmax.store.runs import new_record
    from rmax.survey import spread

    figures = {"a": 100.0, "b": 101.0, "c": 99.5, "d": 100.4, "e": 85.0}
    runs = [dataclasses.replace(new_record("stream", hosts=[h]), status="ok") for h in figures]
    monkeypatch.setattr(spread, "run_metrics", lambda r: [("triad", figures[r.hosts[0]], "B/s", False)])
    alone = spread.node_spread(runs)["stream:triad"]
    assert alone["slow"] == ["e"] and alone["rule"] == spread.RULE
    shared = spread.node_spread(runs, sharing=5)["stream:triad"]
    assert shared["slow"] == [] and shared["nodes"] == figures
    assert shared["rule"].startswith("not flagged: 5 nodes share one machine's cores")
