"""Placement: HPL grid rows or columns inside switches, collective orders, cluster.toml, rankfiles."""

from __future__ import annotations

import pytest

from rmax.errors import RmaxError
from rmax.launch.hosts import Host
from rmax.topology.declared import read_groups, write_cluster_toml
from rmax.topology.placement import (collective_order, heavier_dimension, hpl_placement, natural_placement,
                                     rankfile_text, rank_of)
from vcutil import parse_rankfile


def switches_of_rows(placed, groups, p, q, pmap=0):
    sw = {h: i for i, g in enumerate(groups) for h in g}
    return [{sw[placed.ranks[rank_of(r, c, p, q, pmap)].host] for c in range(q)} for r in range(p)]


def test_icluster_like_rows_inside_switches():
    # 3 switches of 6 two-slot nodes, a flat 3 x 12 grid (Q > 3P: rows are heavier): every row fits a switch.
    groups = [[f"s{s}n{i}" for i in range(6)] for s in range(3)]
    hosts = [Host(h, 2) for i in range(6) for g in groups for h in [g[i]]]   # interleaved hostfile
    placed = hpl_placement(groups, hosts, 3, 12, keep="auto")
    assert placed.split_rows == 0
    assert all(len(s) == 1 for s in switches_of_rows(placed, groups, 3, 12))
    assert natural_placement(groups, hosts, 3, 12).split_rows == 3


@pytest.mark.parametrize("pmap", [0, 1])
def test_rows_with_both_mappings(pmap):
    groups = [["a", "b"], ["c", "d"]]
    hosts = [Host("a", 1), Host("c", 1), Host("b", 1), Host("d", 1)]
    placed = hpl_placement(groups, hosts, 2, 2, pmap, keep="rows")
    assert placed.split_rows == 0
    assert all(len(s) == 1 for s in switches_of_rows(placed, groups, 2, 2, pmap))
    cols = hpl_placement(groups, hosts, 2, 2, pmap, keep="columns")
    assert cols.split_rows == 2 and "2 of 2 process columns inside one switch" in cols.note


def test_auto_follows_hpl_model():
    assert heavier_dimension(2, 2) == "columns"
    assert heavier_dimension(5, 42) == "rows"


def test_rows_that_cannot_fit_are_reported():
    groups = [["a", "b", "c"], ["d", "e", "f"]]
    placed = hpl_placement(groups, [Host(h, 2) for h in "abcdef"], 3, 4, keep="rows")
    assert placed.split_rows == 1 and "2 of 3 process rows" in placed.note
    with pytest.raises(RmaxError, match="needs 16 slots"):
        hpl_placement(groups, [Host(h, 2) for h in "abcdef"], 4, 4)


def test_collective_orders_helix():
    groups = [["a", "b"]]
    hosts = [Host("a", 2), Host("b", 2)]
    assert [s.host for s in collective_order(groups, hosts, "block")] == ["a", "a", "b", "b"]
    assert [s.host for s in collective_order(groups, hosts, "cyclic")] == ["a", "b", "a", "b"]
    assert [s.host for s in collective_order(groups, hosts, "serpentine")] == ["a", "b", "b", "a"]


def test_rankfile_round_trip():
    ranks = collective_order([["a"], ["b"]], [Host("a", 2), Host("b", 1)])
    text = rankfile_text(ranks)
    assert text.splitlines()[1] == "rank 1=a slot=1"
    assert parse_rankfile(text) == ranks
    assert "slot=0-1" in rankfile_text(ranks, cpus="0-1")


def test_cluster_toml(tmp_path):
    p = write_cluster_toml(tmp_path / "c.toml", [["a", "b"], ["c"]], ["sw1", "sw2"], note="test")
    assert read_groups(p) == (["sw1", "sw2"], [["a", "b"], ["c"]])
    bad = tmp_path / "bad.toml"
    bad.write_text('[[switch]]\nname = "x"\nnodes = ["a"]\n[[switch]]\nname = "y"\nnodes = ["a"]\n')
    with pytest.raises(RmaxError, match="on two switches"):
        read_groups(bad)
    (tmp_path / "none.toml").write_text("[nodes]\n")
    with pytest.raises(RmaxError, match="declares no switches"):
        read_groups(tmp_path / "none.toml")
