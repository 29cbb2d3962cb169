"""Every registry of named variants refuses a second variant of a name it holds, and keeps the first."""

from __future__ import annotations

import importlib

import pytest

REGISTRIES = [("rmax.families", "FAMILIES", "families"), ("rmax.launch.base", "REGISTRY", None),
              ("rmax.hpl.engines", "ENGINES", None), ("rmax.agent.probes", "REGISTRY", None),
              ("rmax.survey.steps", "STEPS", None), ("rmax.tune.strategies", "STRATEGIES", None)]


@pytest.mark.parametrize("module, name, fill", REGISTRIES)
def test_a_second_variant_of_a_name_is_refused(module, name, fill):
    mod = importlib.import_module(module)
    if fill:
        getattr(mod, fill)()                 # the families register on first use
    importlib.import_module("rmax.launch")   # the launchers, with the package
    registry = getattr(mod, name)
    taken, first = next(iter(registry.items()))
    with pytest.raises(RuntimeError, match=f"two .* named {taken}"):
        registry.register(type("Again", (), {"name": taken, "__module__": "elsewhere"}))
    assert registry[taken] is first
