"""Cost arithmetic (Table Two of the Kronos article, Eadline and Layton), cluster.toml errors,
and `rmax cost`."""

import json
import math
import tomllib

import pytest

from rmax.errors import RmaxError
from rmax.model.cost import cost_figures, parse_cluster
from cliutil import assert_one_line_error, run_cli

KRONOS = """
name = "kronos"
[nodes]
count = 8
price = 311.25
watts = 112.5
ranks = 1
memory_gib = 1
rpeak_gflops = 3.5125
[network]
price = 0
latency_us = 29
bandwidth_MBps = 110
[[what_if]]
name = "16 nodes"
nodes = 16
[[what_if]]
name = "GAMMA NICs"
network_price = 2000
latency_us = 10.6
"""


def test_kronos_table_two_arithmetic():
    # Kronos: 14.53 GFLOPS, $2,490, 900 W, peak 28.10 -> $171/GFLOPS, 16.14 MFLOPS/W, 52%
    f = cost_figures(14.53, 2490, 900, 28.10)
    assert f.dollars_per_gflops == pytest.approx(171.37, abs=0.01)
    assert f.mflops_per_watt == pytest.approx(16.14, abs=0.01)
    assert f.percent_of_peak == pytest.approx(51.7, abs=0.1)
    with pytest.raises(RmaxError):
        cost_figures(0, 1, 1)


def test_cluster_parsing_and_what_if_scaling():
    import tomllib

    cf = parse_cluster(tomllib.loads(KRONOS))
    assert cf.cluster.price == pytest.approx(2490) and cf.cluster.watts == pytest.approx(900)
    sixteen, nics = cf.what_if
    assert sixteen.cluster.nodes == 16 and sixteen.cluster.latency_us == 29
    assert nics.cluster.network_price == 2000 and nics.cluster.nodes == 8


@pytest.mark.parametrize("text,words", [
    ("[network]\nprice = 1\n", ["[nodes]"]),
    ("[nodes]\ncount = 2\nprice = 10\n", ["missing field 'watts'"]),
    ("[nodes]\ncount = 0\nprice = 10\nwatts = 5\n", ["count", "outside its range, 1 to"]),
    ("[nodes]\ncount = 2\nprice = -10\nwatts = 5\n", ["price", "outside its range, 0 to"]),
    ("[nodes]\ncount = 2\nprice = 'ten'\nwatts = 5\n", ["price", "number"]),
    ("[nodes]\ncount = 2\nprice = 1\nwatts = 5\n[[what_if]]\nspeed = 3\n", ["unknown field", "speed"]),
    ("bogus = 1\n[nodes]\ncount = 2\nprice = 1\nwatts = 5\n", ["unknown field", "bogus"]),
    ("[nodes]\ncount = 2\nprice = 1\nwatts = 5\ncores = 4\n", ["[nodes]", "unknown field", "cores"]),
    ("[nodes]\ncount = 2\nprice = 1\nwatts = 5\n[network]\nspeed = 4\n", ["[network]", "unknown field", "speed"]),
    ("[nodes]\ncount = 9223372036854775807\nprice = 1e308\nwatts = 5\n", ["count", "outside its range"]),
    ("[nodes]\ncount = 2\nprice = 1e308\nwatts = 5\n", ["price", "outside its range, 0 to 1e+15"]),
    ("[nodes]\ncount = 2\nprice = nan\nwatts = 5\n", ["price", "outside its range"]),
    ("[nodes]\ncount = 2\nprice = 1\nwatts = inf\n", ["watts", "outside its range, 0.1 to"]),
    ("name = 3\n[nodes]\ncount = 2\nprice = 1\nwatts = 5\n", ["name must be a string"]),
    ("[nodes]\ncount = 2\nprice = 1\nwatts = 1e-300\n", ["watts = 1e-300", "range, 0.1 to"]),
    ("[nodes]\ncount = 2\nprice = 1\nwatts = 5\n[network]\nbandwidth_MBps = 1e-300\n", ["bandwidth_MBps", "range"]),
])
def test_cluster_errors(text, words):
    import tomllib

    with pytest.raises(RmaxError) as e:
        parse_cluster(tomllib.loads(text))
    for w in words:
        assert w in str(e.value)


def test_cost_cli(db, tmp_path):
    toml = tmp_path / "cluster.toml"
    toml.write_text(KRONOS)
    p = run_cli("cost", "--cluster", str(toml), "--gflops", "14.53", "--json", check=True)
    d = json.loads(p.stdout)["table2"]
    assert d["dollars_per_gflops"] == pytest.approx(2490 / 14.53)
    p = run_cli("cost", "--cluster", str(toml), "--gflops", "14.53", "--what-if", "--gamma", "1e-9", "--kappa", "5",
                "--json", check=True)
    w = json.loads(p.stdout)["what_if"]
    names = [r["name"] for r in w["rows"]]
    assert names == ["as described", "16 nodes", "GAMMA NICs"]
    base, sixteen, nics = w["rows"]
    assert sixteen["gflops"] > base["gflops"] and nics["price"] == pytest.approx(2490 + 2000)
    assert w["best_buy"] == "16 nodes"          # at these prices nodes buy more than latency
    assert "What if" in run_cli("cost", "--cluster", str(toml), "--gflops", "14.53", "--what-if", "--gamma",
                                "1e-9", "--kappa", "5", check=True).stdout


def test_names_from_cluster_toml_are_shown_as_written(db, tmp_path):
    """cluster.toml's names and its "[network]" sources are text, never terminal markup."""
    toml = tmp_path / "cluster.toml"
    toml.write_text(KRONOS.replace('name = "kronos"', 'name = "kr[/]onos"').replace('name = "16 nodes"',
                                                                                  'name = "16 [b]nodes[/]"'))
    out = run_cli("cost", "--cluster", str(toml), "--gflops", "14.53", "--what-if", "--gamma", "1e-9", "--kappa", "5",
                  check=True, env={"COLUMNS": "250"}).stdout
    assert "kr[/]onos" in out and "16 [b]nodes[/]" in out and "cluster.toml [network] latency_us" in out


def test_cost_cli_errors(db, tmp_path):
    assert_one_line_error(run_cli("cost", "--cluster", str(tmp_path / "none.toml")), 2, "not found")
    bad = tmp_path / "bad.toml"
    bad.write_text("[nodes]\ncount = 2\nprice = 10\n")
    assert_one_line_error(run_cli("cost", "--cluster", str(bad), "--gflops", "1"), 2, "watts")
    bad.write_text("[nodes\n")
    assert_one_line_error(run_cli("cost", "--cluster", str(bad), "--gflops", "1"), 2, "not valid TOML")
    good = tmp_path / "good.toml"
    good.write_text(KRONOS)
    assert_one_line_error(run_cli("cost", "--cluster", str(good)), 1, "no HPL test stored on 8 nodes")


def test_what_if_never_predicts_above_the_peak(db, tmp_path):
    # A DGEMM measured on a faster host (20 GFLOPS per process) cannot stand for nodes of 3.5 GFLOPS peak.
    toml = tmp_path / "cluster.toml"
    toml.write_text(KRONOS)
    p = run_cli("cost", "--cluster", str(toml), "--gflops", "14.53", "--what-if", "--gamma", "5e-11", "--kappa", "5")
    assert_one_line_error(p, 2, "above the Rpeak", "3.5125", "not measured on them", "rmax bench dgemm")
    w = json.loads(run_cli("cost", "--cluster", str(toml), "--gflops", "14.53", "--what-if", "--gamma", "1e-9",
                           "--kappa", "5", "--json", check=True).stdout)["what_if"]
    assert all(r["gflops"] <= r["rpeak_gflops"] for r in w["rows"])


ODD_VALUES = [10 ** 30, 2 ** 63 - 1, 3000000, -1, 0, 1e-300, 1e308, -1e308, math.nan, math.inf, True, "x", [1],
              {"a": 1}]


def test_every_field_refuses_odd_values_or_gives_finite_figures():
    """Each field of each table, set to each odd value: refused in one line, or figures that are all
    finite; never another exception."""
    from rmax.model.cost import NODES, NETWORK, WHAT_IF

    for table, fields in (("nodes", NODES), ("network", NETWORK), ("what_if", WHAT_IF)):
        for field in fields:
            for value in ODD_VALUES:
                data = tomllib.loads(KRONOS)
                (data[table][0] if table == "what_if" else data[table])[field] = value
                try:
                    cf = parse_cluster(data)
                    for c in [cf.cluster, *(w.cluster for w in cf.what_if)]:
                        f = cost_figures(1.0, c.price, c.watts)
                        assert all(math.isfinite(v) for v in (f.dollars_per_gflops, f.mflops_per_watt)), f
                except RmaxError as e:
                    assert "\n" not in str(e), (table, field, value)


def test_absurd_watts_refused_by_the_cli(db, tmp_path):
    toml = tmp_path / "cluster.toml"
    toml.write_text("[nodes]\ncount = 2\nprice = 10\nwatts = 1e-300\n")
    assert_one_line_error(run_cli("cost", "--cluster", str(toml), "--gflops", "1"), 2, "watts", "0.1 to")
