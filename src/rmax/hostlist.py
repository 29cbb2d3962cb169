"""Slurm's hostlist syntax: `node[01-04,07]`, `rack[1-2]-n[1-8]`, read into host names and written
back (the inverse, for showing a list). Every place that takes host names reads them through
`expand`; it needs no `scontrol`."""

from __future__ import annotations

import itertools
import re

from rmax.errors import RmaxError

_NAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9.\-_]{0,252})$")
_RANGE = re.compile(r"([0-9]{1,18})(?:-([0-9]{1,18}))?")
MAX_HOSTS = 100_000          # names one list or hostfile may expand to: beyond any cluster, and refused
                             # before they are made, so `n[0-99999999]` costs nothing
HOSTLIST_HINT = "Slurm's hostlist syntax: node[01-04,07], rack[1-2]-n[1-8]"


def split(text: str, sep: str, where: str) -> list[str]:
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
    items = split(text, ",", where)
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
