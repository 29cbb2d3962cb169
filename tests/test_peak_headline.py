"""% of peak in a survey's summary: against the peak of every node HPL ran on (each node measures its
own), and never above 100%: an HPL rate above the peak says the peak was measured low."""

from rmax.survey.limits import what_limits
from rmax.survey.headline import cluster_peak, peak_beaten, percent_of_peak


def _peak(host, value):
    return {"metric": "Peak used for % of peak", "value": value, "unit": "GFLOPS", "statistic": "basis: measured",
            "role": "peak_basis", "run": f"run-{host}", "host": host}


HPL = {"metric": "HPL Rmax", "value": 150.0, "unit": "GFLOPS", "statistic": "best test", "role": "hpl_rmax",
       "run": "hpl", "host": "n1"}


def test_the_peak_of_a_run_on_several_nodes_is_the_sum_of_theirs():
    rows = [_peak("n1", 100.0), _peak("n2", 90.0), HPL]
    peak = cluster_peak(rows)
    assert peak["value"] == 190.0 and peak["role"] == "cluster_peak" and "n1, n2" in peak["statistic"]
    pct = percent_of_peak(rows)
    assert abs(pct["value"] - 100 * 150 / 190) < 1e-9 and "150.0 / 190.0 GFLOPS" in pct["statistic"]
    assert cluster_peak([_peak("n1", 100.0)])["role"] == "peak_basis"


def test_hpl_above_the_peak_gives_no_percentage_and_says_why():
    rows = [_peak("n1", 120.0), HPL]
    assert percent_of_peak(rows) is None
    said = peak_beaten(rows)
    assert "HPL's 150.0 GFLOPS is above the peak used for % of peak (120.0 GFLOPS" in said
    assert what_limits(rows, [])[0] == said
    assert peak_beaten([_peak("n1", 200.0), HPL]) is None


def test_what_limits_names_a_busy_figure_instead_of_explaining_it():
    rows = [{"metric": "HPL Rmax", "value": 42.0, "unit": "GFLOPS", "role": "hpl_rmax", "run": "busy1"},
            {"metric": "DGEMM bound (all cores)", "value": 100.0, "unit": "GFLOPS", "role": "dgemm_bound",
             "run": "quiet", "at_hpl_shape": True}]
    quiet = what_limits(rows, [])
    assert any("HPL reaches 42.0 GFLOPS, 42% of the DGEMM bound" in line for line in quiet), quiet
    busy = what_limits(rows, [], {"busy1"})
    assert not any("panel factorisation" in line or "HPL reaches" in line for line in busy), busy
    assert "Compute: not judged, HPL Rmax (42 GFLOPS) measured on a busy node" in busy[0], busy


def test_the_survey_leads_with_rmax_its_percent_of_peak_and_what_limits_it():
    from rmax.survey.limits import lead

    rows = [{"metric": "HPL Rmax (N=8000, NB=192, 1x2, rmax)", "value": 42.0, "unit": "GFLOPS", "role": "hpl_rmax",
             "run": "r1"},
            {"metric": "DGEMM bound (all cores)", "value": 100.0, "unit": "GFLOPS", "role": "dgemm_bound",
             "run": "r2", "at_hpl_shape": True}]
    said = lead(rows, what_limits(rows, []))
    assert said.startswith("Rmax 42 GFLOPS (N=8000, NB=192, 1x2, rmax). HPL reaches 42.0 GFLOPS, 42% of the DGEMM"), said
    assert lead([], []) is None


def test_the_terminal_folds_a_metric_counting_each_node_once_and_each_role_apart():
    """64 nodes' peaks from their peakflops steps, 18 of them also from their inventories, and 5 not
    the basis (measured busy): "median of 64 nodes" and "median of 5 nodes", never 82 (a 64-node
    Slurm survey said so before)."""
    from rmax.survey.summary import folded

    rows = [_peak(f"n{i}", 100.0 + i) for i in range(64)] + [_peak(f"n{i}", 166.4) for i in range(18)]
    rows += [{**_peak(f"m{i}", 50.0), "role": None} for i in range(5)]
    shown = [r["shown"] for r in folded(rows) if "shown" in r]
    assert shown == ["Peak used for % of peak (median of 64 nodes)", "Peak used for % of peak (median of 5 nodes)"]
