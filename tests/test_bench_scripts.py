"""Every script in bench/ loads: its imports of rmax name what rmax has (a move inside rmax once left
four of them failing at their first line, unseen until someone ran them)."""

import importlib.machinery
import importlib.util

import pytest

from cliutil import ROOT

SCRIPTS = sorted(p for p in (ROOT / "bench").iterdir() if p.is_file() and p.read_text().startswith("#!/usr/bin/env python"))


def test_there_are_scripts():
    assert len(SCRIPTS) >= 10


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.name)
def test_script_loads(path):
    # as a module, not as __main__: its imports and definitions run, its measurements do not
    loader = importlib.machinery.SourceFileLoader(f"bench_{path.name}", str(path))
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
    loader.exec_module(module)
    assert callable(getattr(module, "main", None)), f"{path.name} has no main()"
