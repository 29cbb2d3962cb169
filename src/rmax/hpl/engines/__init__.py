"""HPL engines by name: rmax (rmax-hpl), hpcc (HPC Challenge's HPL), xhpl:PATH (a user's own build)."""

from rmax.hpl.engines import hpcc, rmax_hpl, xhpl  # noqa: F401  (register)
from rmax.hpl.engines.base import ENGINES, Engine, EngineRun, get_engine

__all__ = ["ENGINES", "Engine", "EngineRun", "get_engine"]
