"""The Grafana dashboard and the Prometheus rules that ship with rmax, files beside this module
(printed by `rmax agent dashboard` and `rmax agent rules`). Every query in them is one the agent's
metrics answer: tests/agent/test_agent_prometheus.py runs each against a real agent."""

from __future__ import annotations

from importlib.resources import files

DASHBOARD = "dashboard.json"     # Grafana: import it, choose the Prometheus data source
RULES = "rules.yml"              # Prometheus: name it under rule_files


def shipped(name: str) -> str:
    return files("rmax.agent").joinpath(name).read_text(encoding="utf-8")
