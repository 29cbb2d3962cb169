"""Shared fixtures: a private results store per test. CLI helpers are in cliutil.py."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def db(tmp_path, monkeypatch) -> Path:
    """A fresh store for this test, used by in-process calls and CLI subprocesses alike."""
    path = tmp_path / "results.db"
    monkeypatch.setenv("RMAX_DB", str(path))
    return path
