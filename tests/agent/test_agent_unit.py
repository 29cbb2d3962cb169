"""The systemd unit of `rmax agent install`: hardened, rated "OK" by `systemd-analyze security`
(below 5.0) and clean for `systemd-analyze verify`, both run on the written file (offline: systemd
need not be PID 1); the store writable under the hardening. Fast: one CLI start-up."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from cliutil import run_cli

from rmax.agent.systemd import DEFAULT_DB, hidden_from_others, interpreter, unit_text
from rmax.errors import RmaxError

needs_analyze = pytest.mark.skipif(not shutil.which("systemd-analyze"), reason="systemd-analyze is not installed")


def settings(text: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for line in text.splitlines():
        if "=" in line and not line.startswith("#"):
            key, value = line.split("=", 1)
            out.setdefault(key, []).append(value)
    return out


def test_default_unit_is_unprivileged_with_its_store_in_its_state_folder():
    s = settings(unit_text("/usr/local/bin/rmax", None, None))
    assert s["DynamicUser"] == ["yes"] and "User" not in s
    assert s["StateDirectory"] == ["rmax-agent"] and s["Environment"] == [f'"RMAX_DB={DEFAULT_DB}"']
    assert DEFAULT_DB.startswith("/var/lib/rmax-agent/") and "ReadWritePaths" not in s
    for key, value in (("ProtectSystem", "strict"), ("ProtectHome", "yes"), ("PrivateTmp", "yes"),
                       ("NoNewPrivileges", "yes"), ("CapabilityBoundingSet", ""),
                       ("SystemCallFilter", "@system-service")):
        assert s[key] == [value], key
    assert "ProtectProc" not in s and "ProcSubset" not in s    # the idle check reads every process's /proc


def test_other_places_are_made_writable_or_refused():
    s = settings(unit_text("/home/ann/venv/bin/rmax", "/etc/rmax/agent.toml", "/srv/rmax/r.db", user="rmax",
                           writable=("/var/lib/node_exporter/textfile",)))
    assert s["User"] == ["rmax"] and "DynamicUser" not in s
    assert s["ReadWritePaths"] == ['"/srv/rmax"', '"/var/lib/node_exporter/textfile"']
    assert s["ProtectHome"] == ["read-only"]      # rmax lives in a home folder: hidden, it could not start
    with pytest.raises(RmaxError, match="own /tmp"):
        unit_text("/usr/bin/rmax", None, "/tmp/r.db")
    with pytest.raises(RmaxError, match="not a user name"):
        unit_text("/usr/bin/rmax", None, None, user="root\nExecStartPre=/bin/sh")


@needs_analyze
def test_systemd_analyze_rates_the_unit_ok_and_verify_is_clean(tmp_path):
    unit = tmp_path / "rmax-agent.service"
    run_cli("agent", "install", "--output", str(unit), check=True)
    sec = subprocess.run(["systemd-analyze", "security", "--offline=yes", "--no-pager", str(unit)],
                         capture_output=True, text=True, timeout=60)
    m = re.search(r"Overall exposure level for rmax-agent\.service: ([0-9.]+) (\w+)", sec.stdout)
    assert m, sec.stdout + sec.stderr
    assert float(m.group(1)) < 5.0 and m.group(2) == "OK", sec.stdout
    v = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, timeout=60)
    assert v.returncode == 0 and not v.stderr.strip() and not v.stdout.strip(), v.stdout + v.stderr


def test_an_install_other_users_cannot_reach_is_named():
    import tempfile

    top = Path(tempfile.mkdtemp(dir="/var/tmp"))      # pytest's own temporary folders are private
    try:
        top.chmod(0o755)
        (top / "private" / "bin").mkdir(parents=True)
        script = top / "private" / "bin" / "rmax"
        script.write_text("#!/usr/bin/env python3\n")
        script.chmod(0o755)
        (top / "private").chmod(0o700)
        assert hidden_from_others(str(script)) == str(top / "private")
        (top / "private").chmod(0o755)
        assert hidden_from_others(str(script)) is None
        assert interpreter(str(script)) == "/usr/bin/env"
    finally:
        shutil.rmtree(top)
