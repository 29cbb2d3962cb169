"""`rmax info` as a user runs it: a new process, table and --json, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema

from cliutil import run_cli

SCHEMA = Path(__file__).resolve().parent.parent / "src" / "rmax" / "schemas" / "info.schema.json"


def test_info_json_no_measure_is_valid():
    # tests check correctness, not timings: that --no-measure measures nothing is what it says
    proc = run_cli("info", "--json", "--no-measure", check=True)
    inv = json.loads(proc.stdout)
    jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text())).validate(inv)
    assert inv["measured"] is False and inv["rpeak"]["measured"] is None


def test_info_table():
    proc = run_cli("info", check=True)
    out = proc.stdout
    for heading in ("Node ", "Caches (sysfs)", "Network interfaces", "BLAS", "Installed alternatives",
                    "Rpeak (double precision)", "% of peak basis"):
        assert heading in out, heading
    assert "flops/cycle" in out and "fastest of" in out   # a peak is the fastest timed block
    assert "Traceback" not in proc.stderr


def test_info_table_no_measure_says_units_are_assumed():
    proc = run_cli("info", "--no-measure", check=True)
    assert "not measured" in proc.stdout or "assumed" in proc.stdout or "AVX-512" not in proc.stdout


def test_info_bad_option_is_a_usage_error():
    proc = run_cli("info", "--no-such-option")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "no-such-option" in proc.stderr


def test_info_help():
    proc = run_cli("info", "--help", check=True)
    assert "--no-measure" in proc.stdout and "--json" in proc.stdout
