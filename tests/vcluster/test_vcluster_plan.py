"""The virtual cluster's plan and bad input, without creating anything."""

from __future__ import annotations

import pytest

from rmax.errors import RmaxError
from rmax.vcluster.addresses import choose_subnet, prefix_for
from rmax.vcluster.plan import make_plan, parse_rate, spread, trunk_pairs


def test_nodes_spread_evenly_in_blocks():
    assert spread(4, 2) == [0, 0, 1, 1]
    assert spread(5, 2) == [0, 0, 0, 1, 1]
    assert spread(3, 3) == [0, 1, 2]


def test_trunks():
    assert trunk_pairs(3, "chain") == [(0, 1), (1, 2)]
    assert trunk_pairs(3, "mesh") == [(0, 1), (0, 2), (1, 2)]


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
