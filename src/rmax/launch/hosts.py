"""Host lists: `--hosts a:2,b:2`, Slurm's hostlist syntax (`node[01-04]:2`), hostfiles, and
the slots they offer."""

from __future__ import annotations

import itertools
import os
import re
import socket
from dataclasses import dataclass
from pathlib import Path

from rmax.errors import RmaxError

_NAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9.\-_]{0,252})$")
_RANGE = re.compile(r"([0-9]{1,18})(?:-([0-9]{1,18}))?")
MAX_SLOTS = 1 << 16          # per host: beyond any node's cores
MAX_HOSTS = 100_000          # names one list or hostfile may expand to: beyond any cluster, and refused
                             # before they are made, so `n[0-99999999]` costs nothing
HOSTLIST_HINT = "Slurm's hostlist syntax: node[01-04,07], rack[1-2]-n[1-8]"


@dataclass(frozen=True)
class Host:
    name: str
    slots: int


def local_slots() -> int:
    """Cores this process may use (affinity mask), the default slot count of the local host."""
    return len(os.sched_getaffinity(0))


def _split(text: str, sep: str, where: str) -> list[str]:
    """text cut at `sep` outside brackets; a nested or unbalanced bracket is refused."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c == "[":
            depth += 1
            if depth > 1:
                raise RmaxError(f"{where}: brackets nest in '{text}'", hint=HOSTLIST_HINT)
        elif c == "]":
            depth -= 1
            if depth < 0:
                raise RmaxError(f"{where}: ']' without '[' in '{text}'", hint=HOSTLIST_HINT)
        elif c == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    if depth:
        raise RmaxError(f"{where}: '[' without ']' in '{text}'", hint=HOSTLIST_HINT)
    return [*parts, text[start:]]


def _pattern(name: str, where: str) -> list[list[tuple[int, int, int]] | str]:
    """A name with brackets as its pieces: text, or a bracket's ranges (first, last, width)."""
    pieces = []
    for piece in re.split(r"(\[[^\]]*\])", name):
        if not piece.startswith("["):
            pieces.append(piece)
            continue
        ranges = []
        for item in piece[1:-1].split(","):
            if not item:
                raise RmaxError(f"{where}: an empty range in '{name}'", hint=HOSTLIST_HINT)
            m = _RANGE.fullmatch(item)
            if not m:
                raise RmaxError(f"{where}: '{item}' in '{name}' is not a number or a range such as 01-04",
                                hint=HOSTLIST_HINT)
            first, last = int(m.group(1)), int(m.group(2) or m.group(1))
            if last < first:
                raise RmaxError(f"{where}: range {item} in '{name}' runs backwards",
                                hint=f"write {m.group(2)}-{m.group(1)}")
            ranges.append((first, last, len(m.group(1))))   # zero padding as written: [01-10] is 01 .. 10
        pieces.append(ranges)
    return pieces


def _count(pattern) -> int:
    n = 1
    for piece in pattern:
        if isinstance(piece, list):
            n *= sum(last - first + 1 for first, last, _ in piece)
    return n


def _names(pattern):
    """The names of a pattern, the first bracket varying slowest (as Slurm lists them)."""
    choices = [[f"{i:0{width}d}" for first, last, width in piece for i in range(first, last + 1)]
               if isinstance(piece, list) else [piece] for piece in pattern]
    return ("".join(parts) for parts in itertools.product(*choices))


def expand(text: str, where: str, most: int = MAX_HOSTS) -> list[str]:
    """Host names from Slurm's hostlist syntax: 'a,b', 'node[01-04,07]', 'r[1-2]-n[1-4]' (several
    brackets: every combination); zero padding kept; each name checked; at most `most` names,
    refused before any is made. Every place that takes host names reads them through this."""
    items = _split(text, ",", where)
    patterns = []
    for item in items:
        if not item.strip():
            raise RmaxError(f"{where} '{text}': empty host name")
        patterns.append(_pattern(item.strip(), where))
    total = sum(_count(p) for p in patterns)
    if total > most:
        raise RmaxError(f"{where}: '{text}' names {total} hosts: too many (at most {most} here)",
                        hint="check the ranges")
    names = [n for p in patterns for n in _names(p)]
    bad = next((n for n in names if not _NAME.match(n)), None)
    if bad is not None:
        raise RmaxError(f"{where}: '{bad}' is not a valid host name")
    return names


def compress(names: list[str]) -> str:
    """Names in Slurm's hostlist syntax, the inverse of expand: names that differ only in their last
    number, of one width, become one bracket of ranges ('node[01-04,07]'); others stay as they are.
    The groups come in the order of their first name."""
    groups: dict[tuple[str, str, int], list[int]] = {}
    for name in names:
        m = re.fullmatch(r"(.*?)([0-9]+)([^0-9]*)", name)
        if m is None or len(m[2]) > 18:
            groups.setdefault((name, "", -1), [])
            continue
        width = len(m[2]) if m[2].startswith("0") and len(m[2]) > 1 else 0
        groups.setdefault((m[1], m[3], width), []).append(int(m[2]))
    out = []
    for (head, tail, width), numbers in groups.items():
        if width < 0:
            out.append(head)
            continue
        numbers = sorted(set(numbers))
        runs, start = [], numbers[0]
        for a, b in zip(numbers, numbers[1:] + [None]):
            if b != a + 1:
                runs.append((start, a))
                start = b
        text = ",".join(f"{x:0{width}d}" + (f"-{y:0{width}d}" if y != x else "") for x, y in runs)
        out.append(f"{head}{text}{tail}" if len(numbers) == 1 else f"{head}[{text}]{tail}")
    return ",".join(out)


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
    for item in _split(text, ",", "--hosts"):
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
