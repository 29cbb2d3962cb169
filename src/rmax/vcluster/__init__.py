"""A virtual cluster of network namespaces on this machine: nodes, switches,
shaped links and trunks, a hostfile and a launcher agent for MPI."""

from rmax.vcluster.lifecycle import down, down_by_name, status, up
from rmax.vcluster.plan import Plan, make_plan, parse_rate
from rmax.vcluster.state import State, find, load, load_all

__all__ = ["down", "down_by_name", "status", "up", "Plan", "make_plan", "parse_rate", "State", "find", "load",
           "load_all"]
