"""The tree passes its linter (pyproject.toml's [tool.ruff]: pyflakes' errors and syntax errors):
no unused or undefined name, no import shadowed, in src, tests and bench."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def ruff() -> list[str]:
    exe = Path(sys.executable).with_name("ruff")
    if exe.exists():
        return [str(exe)]
    found = shutil.which("ruff")
    if not found:
        pytest.skip("ruff is not installed (make install puts it in .venv)")
    return [found]


def test_the_tree_passes_the_linter():
    bench = [str(p) for p in (ROOT / "bench").iterdir() if p.is_file() and p.read_text(errors="replace").startswith(
        "#!/usr/bin/env python")]
    got = subprocess.run([*ruff(), "check", "--no-cache", "--output-format", "concise", "src", "tests", *bench],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert got.returncode == 0, got.stdout[-4000:] + got.stderr[-2000:]


def test_the_linter_sees_a_defect(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import os\n\n\ndef f():\n    return undefined_name\n")
    got = subprocess.run([*ruff(), "check", "--no-cache", "--config", str(ROOT / "pyproject.toml"), str(bad)],
                         capture_output=True, text=True, timeout=60)
    assert got.returncode == 1 and "F401" in got.stdout and "F821" in got.stdout
