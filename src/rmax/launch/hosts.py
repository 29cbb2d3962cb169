"""Host lists: `--hosts a:2,b:2`, `node[01-04]:2` (names read by rmax.hostlist), hostfiles, and
the slots they offer."""

from __future__ import annotations

import os
import re
import socket
from dataclasses import dataclass
from pathlib import Path

from rmax.errors import RmaxError
from rmax.hostlist import MAX_HOSTS, expand, split

MAX_SLOTS = 1 << 16          # per host: beyond any node's cores


@dataclass(frozen=True)
class Host:
    name: str
    slots: int


def local_slots() -> int:
    """Cores this process may use (affinity mask), the default slot count of the local host."""
    return len(os.sched_getaffinity(0))


def _host(name: str, slots: str | int | None, where: str) -> Host:
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
    """'a:2,b:2', 'a,b' (one slot each, all cores for the local host), 'node[01-04]:2' (2 each)."""
    hosts: list[Host] = []
    for item in split(text, ",", "--hosts"):
        item = item.strip()
        if not item:
            raise RmaxError(f"--hosts '{text}': empty host name", hint="use name:slots,name:slots")
        name, colon, slots = item.partition(":")
        if colon and not slots:
            raise RmaxError(f"--hosts '{text}': host {name} has a ':' but no slot count", hint="use name:slots or name")
        hosts += [_host(n, slots, "--hosts") for n in expand(name, "--hosts", MAX_HOSTS - len(hosts))]
    return _merge(hosts)


def _hostfile_lines(path: str | Path) -> tuple[list[Host], bool]:
    """Every host of a hostfile as its lines give it (not merged), and whether a launcher reads
    the file as rmax does: one host per line, none named twice (Open MPI refuses a host whose
    slots are given twice, and no launcher expands Slurm's hostlists in a hostfile)."""
    from rmax.textfile import read_text

    p = Path(path)
    lines = read_text(p, "hostfile").splitlines()
    hosts: list[Host] = []
    listed = False   # a line with a hostlist: several hosts, or brackets
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
        where = f"{p}:{i}"
        listed = listed or "[" in name or "," in name
        hosts += [_host(n, slots, where) for n in expand(name, where, MAX_HOSTS - len(hosts))]
    if not hosts:
        raise RmaxError(f"hostfile {p} lists no hosts")
    plain = not listed and len({h.name for h in hosts}) == len(hosts)
    return hosts, plain


def hostfile_hosts(path: str | Path) -> tuple[list[Host], bool]:
    """A hostfile's hosts (merged), and whether the launcher may be given the file as it is
    (else it gets these hosts)."""
    hosts, plain = _hostfile_lines(path)
    return _merge(hosts), plain


def read_hostfile(path: str | Path) -> list[Host]:
    """Open MPI ('node slots=4'), MPICH ('node:4') and plain ('node') hostfile lines, names in
    Slurm's hostlist syntax ('node[01-04] slots=2'); '#' comments."""
    return hostfile_hosts(path)[0]


def _merge(hosts: list[Host]) -> list[Host]:
    """A host named twice gets the sum of its slots, in first-seen order."""
    total: dict[str, int] = {}
    for h in hosts:
        total[h.name] = total.get(h.name, 0) + h.slots
        if total[h.name] > MAX_SLOTS:
            raise RmaxError(f"host {h.name} is given more than the {MAX_SLOTS} slots a host may have")
    return [Host(n, s) for n, s in total.items()]


def fill(hosts: list[Host], np: int) -> list[int]:
    """Ranks per host as mpirun's by-slot mapping places them: each host's slots in order, and
    beyond them (oversubscribed) one more each in turn."""
    counts, left = [], np
    for h in hosts:
        counts.append(min(h.slots, left))
        left -= counts[-1]
    if left > 0:
        rounds, rest = divmod(left, len(hosts))
        counts = [c + rounds + (i < rest) for i, c in enumerate(counts)]
    return counts


def host_argument(hosts: list[Host]) -> str:
    """'a:2,b:2' for a launcher's --host: one argument, which the kernel caps at 128 KiB."""
    text = ",".join(f"{h.name}:{h.slots}" for h in hosts)
    if len(text) > 100_000:
        raise RmaxError(f"{len(hosts)} hosts are too many for the launcher's command line",
                        hint="list them in a hostfile of plain 'host slots=N' lines, each host once")
    return text


def check_resolvable(hosts: list[Host]) -> None:
    """Every host name must resolve, or the launcher would hang or fail obscurely later."""
    for h in hosts:
        try:
            socket.getaddrinfo(h.name, None)
        except socket.gaierror:
            raise RmaxError(f"unknown host '{h.name}': it does not resolve",
                            hint="check the name, /etc/hosts or DNS") from None
