"""Node inventory: what this node is (CPU, caches, memory, NUMA, NICs, MPI, BLAS,
compilers) and its Rpeak, each unreadable fact null with the reason beside it."""

from rmax.inventory.collect import SCHEMA, collect, fingerprint, stable_facts
from rmax.inventory.rpeak import derive as derive_rpeak

__all__ = ["SCHEMA", "collect", "fingerprint", "stable_facts", "derive_rpeak", "schema"]


def schema() -> dict:
    """The JSON Schema (draft 2020-12) that `collect()` output and `rmax info --json` follow."""
    import json
    from importlib.resources import files

    return json.loads(files("rmax").joinpath("schemas", "info.schema.json").read_text())
