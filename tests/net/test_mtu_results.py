"""The MTU experiment's verdicts: `rmax compare`'s rule (Welch over repeats, Holm over every test,
a minimum change), and the range of the repeats beside each median."""

from rmax.nic.mtu_results import Collector


def test_only_a_real_change_counts_and_the_median_shows_its_range():
    c = Collector([1500, 9000])
    for i in range(5):
        c.add(1500, ["a"], latency_us=10 + i * 0.1, bandwidth_MBps=100 + i)
        c.add(9000, ["b"], latency_us=10.05 + i * 0.1, bandwidth_MBps=200 + i)
    base, jumbo = c.rows()
    assert base["latency_us_range"] == [10.0, 10.4] and "vs_baseline" not in base
    vs = jumbo["vs_baseline"]
    assert vs["bandwidth_MBps"]["significant"] and vs["bandwidth_MBps"]["p_adjusted"] >= vs["bandwidth_MBps"]["p"]
    assert vs["latency_us"]["significant"] is False                 # 0.5 %: noise
    # a separable but tiny change (0.3 %) is below the minimum change: not significant
    t = Collector([1500, 9000])
    for i in range(5):
        t.add(1500, [], bandwidth_MBps=1000.0 + 0.01 * i)
        t.add(9000, [], bandwidth_MBps=1003.0 + 0.01 * i)
    d = t.rows()[1]["vs_baseline"]["bandwidth_MBps"]
    assert d["p_adjusted"] < 0.05 and d["significant"] is False


def test_the_report_shows_the_experiment_as_the_terminal_does(db, tmp_path):
    import json

    from cliutil import run_cli
    from rmax.store import open_store

    c = Collector([1500, 9000])
    for i in range(3):
        c.add(1500, ["a"], latency_us=10 + i, bandwidth_MBps=100 + i)
        c.add(9000, ["b"], latency_us=10 + i, bandwidth_MBps=200 + i)
    with open_store() as s:
        with s.start_run("experiment-mtu", params={"repeats": 3}) as run:
            run.update(summary={"results": c.rows(), "repeats": 3, "baseline_mtu": 1500})
    out = tmp_path / "rep"
    run_cli("report", run.id, "--out", str(out), check=True)
    html = (out / "index.html").read_text()
    assert "MTU experiment" in html and "101.0 [100.0-102.0]" in html and "p=" in html and "Holm" in html
    data = json.loads((out / "data" / "experiment_mtu.json").read_text())
    assert [d["mtu"] for d in data] == [1500, 9000] and data[1]["bandwidth_MBps"] == 201.0


def test_the_report_says_a_partial_experiment(db, tmp_path):
    from cliutil import run_cli
    from rmax.store import open_store

    c = Collector([1500, 9000])
    for i in range(2):
        c.add(1500, ["a"], latency_us=10 + i, bandwidth_MBps=100 + i)
        c.add(9000, ["b"], latency_us=None if i else 10.0, bandwidth_MBps=200 + i)
    assert c.gaps() == ["MTU 9000: no latency_us in 1 repeat(s)"]
    with open_store() as s:
        with s.start_run("experiment-mtu", params={"repeats": 2}) as run:
            run.update(summary={"results": c.rows(), "repeats": 2, "baseline_mtu": 1500})
            run.finish("partial", "repeats that measured nothing: " + "; ".join(c.gaps()))
    out = tmp_path / "rep"
    run_cli("report", run.id, "--out", str(out), check=True)
    html = (out / "index.html").read_text()
    assert "partial: repeats that measured nothing: MTU 9000: no latency_us in 1 repeat(s)" in html
    assert "10.0 (1 of 2 repeats)" in html
