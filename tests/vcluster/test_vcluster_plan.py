"""The virtual cluster's plan and bad input, without creating anything."""

from __future__ import annotations

import pytest

from rmax.errors import RmaxError
from rmax.vcluster.addresses import choose_subnet, prefix_for
from rmax.vcluster.plan import make_plan, parse_rate, parse_sizes, spread, trunk_pairs


def test_nodes_spread_evenly_in_blocks():
    assert spread(4, 2) == [0, 0, 1, 1]
    assert spread(5, 2) == [0, 0, 0, 1, 1]
    assert spread(3, 3) == [0, 1, 2]


def test_given_switch_sizes():
    assert spread(10, 3, [4, 3, 3]) == [0, 0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert spread(6, 3, [1, 4, 1]) == [0, 1, 1, 1, 1, 2]
    assert parse_sizes("4, 3,3") == [4, 3, 3]
    p = make_plan("ab", 6, 3, "10.213.9.0/24", sizes=[1, 4, 1])
    assert p.groups() == [["ab-n1"], ["ab-n2", "ab-n3", "ab-n4", "ab-n5"], ["ab-n6"]]


@pytest.mark.parametrize("sizes,words", [([4, 3], "gives 2 switches but --switches is 3"),
                                         ([4, 3, 2], "adds up to 9 nodes but --nodes is 10")])
def test_bad_switch_sizes(sizes, words):
    with pytest.raises(RmaxError, match=words):
        make_plan("ab", 10, 3, "10.213.9.0/24", sizes=sizes)
    for text in ("4,0,3", "4,,3", "-1,2", "three"):
        with pytest.raises(RmaxError, match="--switch-sizes"):
            parse_sizes(text)


def test_trunks():
    assert trunk_pairs(3, "chain") == [(0, 1), (1, 2)]
    assert trunk_pairs(3, "mesh") == [(0, 1), (0, 2), (1, 2)]
    assert trunk_pairs(3, "star") == [(0, 3), (1, 3), (2, 3)]
    assert trunk_pairs(1, "star") == []


def test_star_joins_leaves_through_a_spine_with_no_node():
    p = make_plan("ab", 5, 2, "10.213.9.0/24", trunk_kind="star", sizes=[2, 3])
    assert p.switches == ["ab-s1", "ab-s2", "ab-sp"] and p.leaves == ["ab-s1", "ab-s2"] and p.spine == "ab-sp"
    assert [(t.a, t.b) for t in p.trunks] == [(0, 2), (1, 2)]
    assert p.groups() == [["ab-n1", "ab-n2"], ["ab-n3", "ab-n4", "ab-n5"]]
    assert p.tree() == [p.groups(), [["ab-n1", "ab-n2", "ab-n3", "ab-n4", "ab-n5"]]]
    assert type(p).from_dict(p.to_dict()) == p
    one = make_plan("ab", 3, 1, "10.213.9.0/24", trunk_kind="star")
    assert one.spine is None and one.trunks == [] and one.tree() == [[["ab-n1", "ab-n2", "ab-n3"]]]
    assert make_plan("ab", 4, 2, "10.213.9.0/24").spine is None


def test_plan_names_and_addresses():
    p = make_plan("ab", 4, 2, "10.213.9.0/24", link_rate=10**9, trunk_rate=10**8)
    assert [n.name for n in p.nodes] == ["ab-n1", "ab-n2", "ab-n3", "ab-n4"]
    assert [n.address for n in p.nodes] == ["10.213.9.1", "10.213.9.2", "10.213.9.3", "10.213.9.4"]
    assert p.groups() == [["ab-n1", "ab-n2"], ["ab-n3", "ab-n4"]]
    assert p.switches == ["ab-s1", "ab-s2"] and len(p.trunks) == 1
    assert type(p).from_dict(p.to_dict()) == p


@pytest.mark.parametrize("text,bits", [("1gbit", 10**9), ("100mbit", 10**8), ("1.5Mbit", 1_500_000),
                                       ("10mbps", 80_000_000)])
def test_rates(text, bits):
    assert parse_rate(text, "--link") == bits


@pytest.mark.parametrize("args,words", [
    (dict(nodes=10, switches=2, subnet="10.213.9.0/29"), ["10 nodes need 10 addresses", "has only 6"]),
    (dict(nodes=4, switches=0, subnet="10.213.9.0/24"), ["--switches must be at least 1"]),
    (dict(nodes=2, switches=3, subnet="10.213.9.0/24"), ["3 switches but only 2 nodes"]),
])
def test_bad_plans(args, words):
    with pytest.raises(RmaxError) as e:
        make_plan("ab", args["nodes"], args["switches"], args["subnet"])
    for w in words:
        assert w in str(e.value)


def test_bad_rate_and_name():
    with pytest.raises(RmaxError, match="not a rate"):
        parse_rate("fast", "--link")
    with pytest.raises(RmaxError, match="cluster name"):
        make_plan("Bad-Name", 2, 1, "10.213.9.0/24")


def test_subnet_choice_avoids_used_networks():
    assert prefix_for(4) == 24 and prefix_for(300) == 23
    first = choose_subnet(4, None)
    second = choose_subnet(4, None, other_subnets=[first])
    assert first != second
    with pytest.raises(RmaxError, match="overlaps"):
        choose_subnet(4, first, other_subnets=[first])
    with pytest.raises(RmaxError, match="not a private"):
        choose_subnet(4, "8.8.8.0/24")
