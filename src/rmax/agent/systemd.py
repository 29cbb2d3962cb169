"""`rmax agent install`: a systemd unit that runs `rmax agent run` in the foreground.

It only writes the file; enabling it is the administrator's step (the command prints how).
Every value written into the unit is checked (absolute paths, no control characters) and quoted
by systemd's own rules (systemd.service(5), "Command lines"; systemd.unit(5), "Specifiers"):
double quotes with backslash escapes, % doubled everywhere, $ doubled on command lines.

The unit is hardened (systemd.exec(5)): an unprivileged user made for it (DynamicUser=, or
--user), no capabilities, a read-only file system but for its state folder (StateDirectory=,
where the store lives unless --db names another place), its own /tmp, and only the system calls
of @system-service, which hold every call the agent and its probes' native kernels made under
strace (pinned threads and NUMA placement included). What it keeps: every process's /proc (the
idle check counts other processes' runnable threads: no ProtectProc= or ProcSubset=), /sys and
/proc readable (the inventory), the network (metrics, ping-pong) and the munge socket (squeue)."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from rmax.errors import RmaxError
from rmax.textfile import refuse_kernel_tree, write_atomic

UNIT_NAME = re.compile(r"^[A-Za-z0-9:_.\\-]+\.service$")
STATE = "rmax-agent"                          # StateDirectory=: /var/lib/rmax-agent
DEFAULT_DB = f"/var/lib/{STATE}/results.db"
USER_NAME = re.compile(r"^[a-z_][a-z0-9_-]{0,31}$")
HOMES = ("/home", "/root", "/run/user")
PRIVATE_TMP = ("/tmp", "/var/tmp")

# systemd.exec(5); `systemd-analyze security` rates the unit "OK" with them (tests/agent/test_agent_unit.py).
HARDENING = """\
UMask=0077
NoNewPrivileges=yes
CapabilityBoundingSet=
AmbientCapabilities=
ProtectSystem=strict
PrivateTmp=yes
PrivateDevices=yes
ProtectKernelTunables=yes
ProtectKernelModules=yes
ProtectKernelLogs=yes
ProtectControlGroups=yes
ProtectClock=yes
ProtectHostname=yes
RestrictNamespaces=yes
RestrictRealtime=yes
RestrictSUIDSGID=yes
LockPersonality=yes
RemoveIPC=yes
RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6 AF_NETLINK
SystemCallArchitectures=native
SystemCallFilter=@system-service
SystemCallErrorNumber=EPERM
"""


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


def _under(path: str, folders: tuple[str, ...]) -> bool:
    return any(path == f or path.startswith(f + "/") for f in folders)


def interpreter(rmax: str) -> str | None:
    """The real path of the Python that the rmax script's #! line names (a venv's links to its base)."""
    try:
        with open(rmax, "rb") as f:
            first = f.readline(4096)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    words = first[2:].decode(errors="replace").split()
    return os.path.realpath(words[0]) if words else None


def hidden_from_others(path: str) -> str | None:
    """The first folder on the way to `path` that other users cannot enter, or the file itself when they
    cannot run it: an unprivileged service could not start from there."""
    p = Path(path)
    for folder in [*reversed(p.parents), p]:
        try:
            mode = folder.stat().st_mode
        except OSError:
            return str(folder)
        if not mode & stat.S_IXOTH:
            return str(folder)
    return None


def unit_text(rmax: str, config: str | None, db: str | None, user: str | None = None,
              writable: tuple[str, ...] = (), python: str | None = None) -> str:
    """The unit; `writable`: other folders the agent writes (node_exporter's textfile folder); `python`:
    the interpreter rmax runs with, which must not be hidden either."""
    argv = [_checked_path("rmax executable", rmax), "agent", "run"]
    if config:
        argv += ["--config", _checked_path("--config", config)]
    db = _checked_path("--db", db) if db else DEFAULT_DB
    if _under(db, PRIVATE_TMP):
        raise RmaxError(f"--db: {db} would be in the service's own /tmp (PrivateTmp=), not this one",
                        hint=f"leave --db out for {DEFAULT_DB}")
    if user is not None and not USER_NAME.match(user):
        raise RmaxError(f"--user: {user[:40]!r} is not a user name")
    folders = [] if _under(db, (f"/var/lib/{STATE}",)) else [str(Path(db).parent)]
    folders += [_checked_path("textfile folder", w) for w in writable]
    # ProtectHome=yes would hide rmax, its configuration or its store where one of them is in a home folder
    home = "read-only" if any(_under(p, HOMES) for p in (argv[0], python or "", config or "", db, *folders)) else "yes"
    rw = "".join(f"ReadWritePaths={_quoted(f, command_line=False)}\n" for f in folders)
    return (
        "[Unit]\n"
        "Description=rmax agent: this node's rates, measured while it is idle, served as Prometheus metrics\n"
        "After=network-online.target\n"
        "Wants=network-online.target\n\n"
        "[Service]\n"
        "Type=simple\n"
        + (f"User={user}\n" if user else "DynamicUser=yes\n") +
        f"StateDirectory={STATE}\n"
        "StateDirectoryMode=0700\n"
        f"Environment={_quoted('RMAX_DB=' + db, command_line=False)}\n"
        f"ExecStart={' '.join(_quoted(a, command_line=True) for a in argv)}\n"
        # SIGTERM to the agent only: it stops its probe itself and stores the run as interrupted
        "KillMode=mixed\n"
        "TimeoutStopSec=30\n"
        "Restart=on-failure\n"
        "RestartSec=30\n"
        f"ProtectHome={home}\n"
        f"{rw}"
        f"{HARDENING}\n"
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
