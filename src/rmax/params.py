"""The value types of every command's options: numbers that are finite and in range,
sizes, durations, lists, hosts, and the files rmax reads or writes. A bad value is
refused while the command line is parsed, in one line naming the option, so it never
starts a job or becomes a stored run. (click's own FloatRange lets 'nan' through:
every comparison with nan is false.)"""

from __future__ import annotations

import math
import re

import click

from rmax.errors import RmaxError

BIG = 1 << 40           # the default upper bound of a count: far beyond any real one
_INT = re.compile(r"\s*[+-]?[0-9]+\s*")
_DIGITS = 30            # a whole number longer than this is beyond every bound: not converted (int() of
                        # thousands of digits is slow, and refused by Python past 4300)
_FLOAT = re.compile(r"\s*[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?\s*")


def _name(param) -> str:
    if param is None:
        return "value"
    opts = getattr(param, "opts", None)
    return max(opts, key=len) if opts and opts[0].startswith("-") else param.human_readable_name


def _fmt(x) -> str:
    return f"{x:g}" if isinstance(x, float) else str(x)


def to_number(text, what: str, lo, hi, integer: bool = False, lo_open: bool = False, rule: str | None = None):
    """A finite number in [lo, hi] (or (lo, hi] with lo_open) from a user's text; RmaxError otherwise
    (`rule` says the range in the option's own words)."""
    if isinstance(text, bool):
        raise RmaxError(f"{what}: {text!r} is not a number")
    if isinstance(text, (int, float)):
        value = text
    elif integer:
        if not _INT.fullmatch(str(text)):
            raise RmaxError(f"{what}: '{text}' is not a whole number")
        digits = str(text).strip().lstrip("+-").lstrip("0")
        if len(digits) > _DIGITS:   # said as any number out of range is, however many digits it has
            value = (-1 if str(text).strip().startswith("-") else 1) * 10 ** _DIGITS
        else:
            value = int(text)
    elif str(text).strip().lower().lstrip("+-") in ("nan", "inf", "infinity"):
        raise RmaxError(f"{what} must be a finite number, not {text}")
    elif not _FLOAT.fullmatch(str(text)):   # float() alone would take '1_000'
        raise RmaxError(f"{what}: '{text}' is not a number")
    else:
        value = float(text)
    if integer and isinstance(value, float):
        if not value.is_integer():
            raise RmaxError(f"{what}: '{text}' is not a whole number")
        value = int(value)
    if isinstance(value, float) and not math.isfinite(value):
        raise RmaxError(f"{what} must be a finite number, not {text}")
    if (value <= lo if lo_open else value < lo) or value > hi:
        if rule:
            raise RmaxError(f"{what}: {rule}, not {text}")
        if value > hi:
            bound = f"at most {_fmt(hi)}"
        elif lo == 0:
            bound = "positive" if lo_open else "non-negative"
        else:
            bound = f"above {_fmt(lo)}" if lo_open else f"at least {_fmt(lo)}"
        raise RmaxError(f"{what} must be {bound}, not {text}")
    return value


class Number(click.ParamType):
    """A finite number in range: every numeric option of rmax uses it."""

    def __init__(self, lo, hi=BIG, *, integer: bool = False, lo_open: bool = False, metavar: str | None = None,
                 rule: str | None = None):
        self.lo, self.hi, self.integer, self.lo_open, self.rule = lo, hi, integer, lo_open, rule
        self.name = metavar or ("INTEGER" if integer else "NUMBER")

    def convert(self, value, param, ctx):
        return to_number(value, _name(param), self.lo, self.hi, self.integer, self.lo_open, self.rule)


def Count(lo: int = 1, hi: int = BIG, metavar: str | None = None) -> Number:
    """A whole number in [lo, hi]: ranks, repeats, trials, nodes."""
    return Number(lo, hi, integer=True, metavar=metavar)


def Seconds(lo: float = 0.0, hi: float = 30 * 86400, lo_open: bool = True) -> Number:
    """A time in seconds: above zero and at most 30 days unless told otherwise."""
    return Number(lo, hi, lo_open=lo_open, metavar="SECONDS")


def _items(value, param, most: int, noun: str) -> list[str]:
    """A comma-separated list's items, at most `most` of them."""
    parts = str(value).split(",")
    if len(parts) > most:
        raise RmaxError(f"{_name(param)}: {len(parts)} {noun}, more than the {most} accepted")
    return parts


class NumberList(click.ParamType):
    """'a,b,c': each a finite number in range."""

    def __init__(self, lo, hi=BIG, *, integer: bool = False, lo_open: bool = False, most: int = 1000,
                 rule: str | None = None):
        self.item = Number(lo, hi, integer=integer, lo_open=lo_open, rule=rule)
        self.most = most
        self.name = "N,..." if integer else "X,..."

    def convert(self, value, param, ctx):
        if isinstance(value, (list, tuple)):
            return list(value)
        return [self.item.convert(p, param, ctx) for p in _items(value, param, self.most, "values")]


class Shapes(click.ParamType):
    """'MxNxK,...': matrix shapes, each order an integer in [1, hi]."""

    name = "MxNxK,..."

    def __init__(self, hi: int, most: int = 64):
        self.hi, self.most = hi, most

    def convert(self, value, param, ctx):
        if isinstance(value, (list, tuple)):
            return tuple(tuple(s) for s in value)
        out = []
        for item in _items(value, param, self.most, "shapes"):
            dims = item.strip().lower().split("x")
            if len(dims) != 3:
                raise RmaxError(f"{_name(param)}: '{item}' is not a shape MxNxK (e.g. 3000x1500x128)")
            out.append(tuple(to_number(d, f"{_name(param)} {item.strip()}", 1, self.hi, integer=True) for d in dims))
        return tuple(out)


class Names(click.ParamType):
    """'a,b,c': comma-separated names as a tuple in the order given; with `known`, each must be
    one of them (otherwise the command checks them)."""

    name = "NAME,..."

    def __init__(self, known: tuple[str, ...] | None = None, noun: str = "name", most: int = 100):
        self.known, self.noun, self.most = (tuple(known) if known else None), noun, most

    def convert(self, value, param, ctx):
        if isinstance(value, (list, tuple)):
            return tuple(value)
        names = tuple(p.strip() for p in _items(value, param, self.most, self.noun + "s") if p.strip())
        if not names:
            raise RmaxError(f"{_name(param)}: no {self.noun} given")
        for item in names:
            if self.known and item not in self.known:
                raise RmaxError(f"{_name(param)}: unknown {self.noun} '{item}'", hint=f"one of {', '.join(self.known)}")
        return names


class Size(click.ParamType):
    """Bytes, with units: 4096, 64K, 8MiB, 1GB (rmax.sizes)."""

    def __init__(self, lo: int = 1, hi: int | None = None):
        from rmax.sizes import MAX_BYTES

        self.lo, self.hi = lo, MAX_BYTES if hi is None else hi
        self.name = "SIZE"

    def convert(self, value, param, ctx):
        from rmax.sizes import parse_size

        return parse_size(value, _name(param), self.lo, self.hi)


class Rate(click.ParamType):
    """Bits/s, as tc writes them: 1gbit, 100mbit, 25gbit (vcluster.plan.parse_rate)."""
    name = "RATE"

    def convert(self, value, param, ctx):
        from rmax.vcluster.plan import parse_rate

        return value if isinstance(value, int) else parse_rate(value, _name(param))


class SizeList(Size):
    """'8,64K,1MiB'."""

    def __init__(self, lo: int = 1, hi: int | None = None, most: int = 1000):
        super().__init__(lo, hi)
        self.most = most
        self.name = "SIZE,..."

    def convert(self, value, param, ctx):
        if isinstance(value, (list, tuple)):
            return tuple(value)
        return tuple(super(SizeList, self).convert(p, param, ctx) for p in _items(value, param, self.most, "sizes"))


class Duration(click.ParamType):
    """'30m', '90s', '1.5h', '45' (minutes) -> seconds, in range."""

    name = "DURATION"
    _RE = re.compile(r"\s*([0-9]{1,12}(?:\.[0-9]{1,12})?)\s*(s|sec|m|min|h|hr)?\s*", re.I)
    _UNIT = {"s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "hr": 3600}

    def __init__(self, lo: float = 1.0, hi: float = 30 * 86400):
        self.lo, self.hi = lo, hi

    def convert(self, value, param, ctx):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return to_number(value, _name(param), self.lo, self.hi)
        m = self._RE.fullmatch(str(value))
        if not m:
            raise RmaxError(f"{_name(param)}: '{value}' is not a duration", hint="write e.g. 30m, 90s or 2h")
        seconds = float(m.group(1)) * self._UNIT[(m.group(2) or "m").lower()]
        return to_number(seconds, f"{_name(param)} {value}", self.lo, self.hi)


def _alone(ctx, other: str) -> None:
    """--hosts and --hostfile name the same thing: refuse both before reading either."""
    if ctx is not None and ctx.params.get(other.lstrip("-")) is not None:
        raise RmaxError("give --hosts or --hostfile, not both")


class Hosts(click.ParamType):
    """'a:2,b:2' or Slurm's 'node[01-04]:2': checked (names, ranges, slot counts) while parsing; the text is kept."""

    name = "H:N,..."

    def convert(self, value, param, ctx):
        from rmax.launch.hosts import parse_hosts

        _alone(ctx, "--hostfile")
        parse_hosts(str(value))
        return str(value)


class Interface(click.ParamType):
    """A network interface of this host with an IPv4 address (the one MPI uses between hosts)."""

    name = "IFACE"

    def convert(self, value, param, ctx):
        from rmax.launch.netscope import interface_network

        interface_network(str(value))
        return str(value)


class Label(click.ParamType):
    """A note stored with a run: one line of printable text, since it is printed back to terminals
    (an escape sequence in a shared store would drive the reader's terminal)."""

    name = "TEXT"
    MAX = 200

    def convert(self, value, param, ctx):
        text = str(value)
        bad = next((c for c in text if not c.isprintable()), None)
        if bad is not None:
            self.fail(f"'{text.encode('unicode_escape').decode()[:60]}' holds a control character "
                      f"({bad.encode('unicode_escape').decode()}): a label is one line of printable text", param, ctx)
        if len(text) > self.MAX:
            self.fail(f"a label is at most {self.MAX} characters, not {len(text)}", param, ctx)
        return text


class InputFile(click.ParamType):
    """A text file rmax reads: it must exist, be a regular readable UTF-8 file, and pass `check`
    (a reader such as read_hostfile, so its content is refused while parsing too)."""

    name = "FILE"

    def __init__(self, check=None, missing_hint: str | None = None, alone_from: str | None = None):
        self.check, self.missing_hint, self.alone_from = check, missing_hint, alone_from

    def convert(self, value, param, ctx):
        from pathlib import Path

        from rmax.textfile import read_text

        if self.alone_from:
            _alone(ctx, self.alone_from)
        if self.missing_hint and str(value) and not Path(value).exists():
            raise RmaxError(f"cannot read {_name(param)} {value}: not found", hint=self.missing_hint)
        read_text(value, _name(param))
        if self.check is not None:
            self.check(value)
        return str(value)


class OutputFile(click.ParamType):
    """A file rmax writes: not a folder or a device, in a folder that exists (or that rmax
    creates, with make_parents)."""

    name = "FILE"

    def __init__(self, make_parents: bool = False, suffix: str | None = None):
        self.make_parents, self.suffix = make_parents, suffix

    def convert(self, value, param, ctx):
        from rmax.textfile import check_output

        if self.suffix and not str(value).lower().endswith(self.suffix):
            raise RmaxError(f"{_name(param)} {value} must end in {self.suffix}")
        return str(check_output(value, _name(param), self.make_parents))


class StorePath(click.ParamType):
    """The results store's path (--db or RMAX_DB): never under /dev, /proc or /sys; whether it may
    be created, written or read is the store's to say when a command opens it (rmax.store.db), and
    a command that only reads creates nothing."""

    name = "FILE"

    def convert(self, value, param, ctx):
        from pathlib import Path

        from rmax.store.db import store_mode
        from rmax.textfile import refuse_kernel_tree

        if not str(value):
            raise RmaxError("the results store's path (--db or RMAX_DB) is empty")
        path = Path(str(value)).expanduser()
        refuse_kernel_tree(path, "the results store")
        store_mode()      # a bad RMAX_DB_MODE is refused now, not when a measurement is about to be stored
        return str(path)


class OutputDir(click.ParamType):
    """A folder rmax creates or writes into."""

    name = "DIR"

    def convert(self, value, param, ctx):
        from rmax.textfile import check_output_dir

        return str(check_output_dir(value, _name(param)))


def _read_hostfile(path):
    from rmax.launch.hosts import read_hostfile

    return read_hostfile(path)


def _read_groups(path):
    from rmax.topology.declared import read_groups

    return read_groups(path)


HOSTS = Hosts()
HOSTFILE = InputFile(check=_read_hostfile, alone_from="--hosts")
TOPOLOGY = InputFile(check=_read_groups)   # a cluster.toml with [[switch]] groups
TIMEOUT = Seconds(0, 7 * 86400)   # a watchdog of more than a week is a mistake, not a plan
