"""Host lists: `--hosts a:2,b:2`, hostfiles, and the slots they offer."""

from __future__ import annotations

import os
import re
import socket
from dataclasses import dataclass
from pathlib import Path

from rmax.errors import RmaxError

_NAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9.\-_]{0,252})$")
MAX_SLOTS = 1 << 16          # per host: beyond any node's cores


@dataclass(frozen=True)
class Host:
    name: str
    slots: int


def local_slots() -> int:
    """Cores this process may use (affinity mask), the default slot count of the local host."""
    return len(os.sched_getaffinity(0))


def _host(name: str, slots: str | int | None, where: str) -> Host:
    if not _NAME.match(name):
        raise RmaxError(f"{where}: '{name}' is not a valid host name")
    if slots is None or slots == "":
        n = local_slots() if name in ("localhost", socket.gethostname()) else 1
    else:
        if not re.fullmatch(r"[+-]?[0-9]{1,30}", str(slots)):
            raise RmaxError(f"{where}: slot count '{slots}' of host {name} is not a whole number")
        n = int(slots)
        if n < 1:
            raise RmaxError(f"{where}: host {name} needs at least one slot, not {n}")
        if n > MAX_SLOTS:
            raise RmaxError(f"{where}: {n} slots for host {name} is more than the {MAX_SLOTS} a host may have")
    return Host(name, n)


def parse_hosts(text: str) -> list[Host]:
    """'a:2,b:2' or 'a,b' (one slot each, all cores for the local host)."""
    hosts = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            raise RmaxError(f"--hosts '{text}': empty host name", hint="use name:slots,name:slots")
        name, colon, slots = item.partition(":")
        if colon and not slots:
            raise RmaxError(f"--hosts '{text}': host {name} has a ':' but no slot count", hint="use name:slots or name")
        hosts.append(_host(name, slots, "--hosts"))
    return _merge(hosts)


def read_hostfile(path: str | Path) -> list[Host]:
    """Open MPI ('node slots=4'), MPICH ('node:4') and plain ('node') hostfile lines; '#' comments."""
    from rmax.textfile import read_text

    p = Path(path)
    lines = read_text(p, "hostfile").splitlines()
    hosts = []
    for i, raw in enumerate(lines, 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        words = line.split()
        name, _, slots = words[0].partition(":")
        for w in words[1:]:
            key, _, val = w.partition("=")
            if key in ("slots", "max_slots", "max-slots"):
                if key == "slots":
                    slots = val
            else:
                raise RmaxError(f"{p}:{i}: unknown hostfile field '{w}'", hint="expected 'host slots=N' or 'host:N'")
        hosts.append(_host(name, slots, f"{p}:{i}"))
    if not hosts:
        raise RmaxError(f"hostfile {p} lists no hosts")
    return _merge(hosts)


def _merge(hosts: list[Host]) -> list[Host]:
    """A host named twice gets the sum of its slots, in first-seen order."""
    total: dict[str, int] = {}
    for h in hosts:
        total[h.name] = total.get(h.name, 0) + h.slots
        if total[h.name] > MAX_SLOTS:
            raise RmaxError(f"host {h.name} is given more than the {MAX_SLOTS} slots a host may have")
    return [Host(n, s) for n, s in total.items()]


def check_resolvable(hosts: list[Host]) -> None:
    """Every host name must resolve, or the launcher would hang or fail obscurely later."""
    for h in hosts:
        try:
            socket.getaddrinfo(h.name, None)
        except socket.gaierror:
            raise RmaxError(f"unknown host '{h.name}': it does not resolve",
                            hint="check the name, /etc/hosts or DNS") from None
