"""`rmax agent install`: a systemd unit that runs `rmax agent run` in the foreground.

It only writes the file; enabling it is the administrator's step (the command prints how).
Every value written into the unit is checked (absolute paths, no control characters) and quoted
by systemd's own rules (systemd.service(5), "Command lines"; systemd.unit(5), "Specifiers"):
double quotes with backslash escapes, % doubled everywhere, $ doubled on command lines."""

from __future__ import annotations

import re
from pathlib import Path

from rmax.errors import RmaxError
from rmax.textfile import refuse_kernel_tree, write_atomic

UNIT_NAME = re.compile(r"^[A-Za-z0-9:_.\\-]+\.service$")


def _checked_path(what: str, value: str | Path) -> str:
    text = str(value)
    if any(ord(c) < 32 or ord(c) == 127 for c in text):
        raise RmaxError(f"{what}: control characters are not allowed in a unit file path")
    if not Path(text).is_absolute():
        raise RmaxError(f"{what}: '{text}' is not an absolute path", hint="systemd starts the agent from /")
    return text


def _quoted(text: str, command_line: bool) -> str:
    text = text.replace("\\", "\\\\").replace('"', '\\"').replace("%", "%%")
    if command_line:
        text = text.replace("$", "$$")
    return f'"{text}"'


def unit_text(rmax: str, config: str | None, db: str | None) -> str:
    argv = [_checked_path("rmax executable", rmax), "agent", "run"]
    if config:
        argv += ["--config", _checked_path("--config", config)]
    env = f"Environment={_quoted('RMAX_DB=' + _checked_path('--db', db), command_line=False)}\n" if db else ""
    return (
        "[Unit]\n"
        "Description=rmax agent: this node's rates, measured while it is idle, served as Prometheus metrics\n"
        "After=network-online.target\n"
        "Wants=network-online.target\n\n"
        "[Service]\n"
        "Type=simple\n"
        f"{env}"
        f"ExecStart={' '.join(_quoted(a, command_line=True) for a in argv)}\n"
        # SIGTERM to the agent only: it stops its probe itself and stores the run as interrupted
        "KillMode=mixed\n"
        "TimeoutStopSec=30\n"
        "Restart=on-failure\n"
        "RestartSec=30\n\n"
        "[Install]\n"
        "WantedBy=multi-user.target\n")


def write_unit(path: str | Path, text: str, force: bool) -> Path:
    p = Path(_checked_path("--output", path))
    if not UNIT_NAME.match(p.name):
        raise RmaxError(f"--output: '{p.name}' is not a service unit name", hint="e.g. rmax-agent.service")
    if p.exists() and not force:
        raise RmaxError(f"{p} already exists", hint="pass --force to replace it")
    if not p.parent.is_dir():
        raise RmaxError(f"--output: folder {p.parent} does not exist")
    refuse_kernel_tree(p, "--output")
    return write_atomic(p, text, "the unit file")
