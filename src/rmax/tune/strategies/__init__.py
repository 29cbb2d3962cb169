"""Tuning strategies, registered by name: coordinate, model, bayes, auto."""

from rmax.tune.strategies import auto, bayes, coordinate, model  # noqa: F401  (register)
from rmax.tune.strategies.base import STRATEGIES, Strategy, get_strategy

__all__ = ["STRATEGIES", "Strategy", "get_strategy"]
