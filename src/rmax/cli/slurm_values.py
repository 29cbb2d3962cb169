"""What a value must look like before `rmax slurm script` writes it into a batch script.

A #SBATCH line ends at a newline, so a newline in a value would start a line
of its own, which bash runs as a command: no value may hold a control
character. Names are limited to the characters Slurm's own names use
(slurm.conf manual: node and partition names; sacctmgr: account, QOS and
reservation names), times to the formats of sbatch's --time, constraints to its
feature operators, host lists to Slurm's hostlist syntax, extra directives to
`--option[=value]` without anything a shell or sbatch would split or expand."""

from __future__ import annotations

import re

from rmax.errors import RmaxError

_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_JOB_NAME = re.compile(r"^[A-Za-z0-9_.+:@-]{1,128}$")
# sbatch --constraint: features joined by & | , with [ ] ( ) groups and *count (sbatch manual)
_CONSTRAINT = re.compile(r"^[A-Za-z0-9_.:=&|,*\[\]()-]{1,256}$")
_HOST = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
# an extra directive: a long option and, after =, a value of the characters sbatch's values use
_DIRECTIVE = re.compile(r"^(--[a-z][a-z0-9-]{0,40})(?:=([A-Za-z0-9_.:,=+@%/*&|\[\]()-]{1,256}))?$")
_TIME = re.compile(r"^(?:(\d+)-(\d+)(?::(\d+)(?::(\d+))?)?|(\d+)(?::(\d+)(?::(\d+))?)?)$")
TIME_WORDS = ("UNLIMITED", "INFINITE")


def check_text(value: str, what: str) -> str:
    """No newline, tab or other control character (C0, DEL, C1) anywhere."""
    bad = next((c for c in value if ord(c) < 32 or 127 <= ord(c) < 160), None)
    if bad is not None:
        raise RmaxError(f"{what} contains a control character ({bad!r}): a batch script cannot hold it safely",
                        hint="remove newlines and other control characters from the value")
    return value


def job_name(value: str) -> str:
    check_text(value, "--job-name")
    if not _JOB_NAME.match(value):
        raise RmaxError(f"--job-name '{value}' is not a job name rmax writes",
                        hint="1-128 letters, digits and . _ + : @ -")
    return value


def names(value: str, what: str) -> str:
    """A partition, account, QOS or reservation name; a partition may be a comma-separated list
    (sbatch --partition)."""
    check_text(value, what)
    items = value.split(",") if what == "--partition" else [value]
    for item in items:
        if not _NAME.match(item):
            raise RmaxError(f"{what} '{value}' is not a Slurm name", hint="1-64 letters, digits and . _ -"
                            + (", comma-separated" if what == "--partition" else ""))
    return value


def time_limit(value: str) -> str:
    """sbatch --time: minutes, minutes:seconds, hours:minutes:seconds, days-hours,
    days-hours:minutes, days-hours:minutes:seconds (or UNLIMITED)."""
    check_text(value, "--time")
    if value.upper() in TIME_WORDS:
        return value
    m = _TIME.match(value)
    if not m:
        raise RmaxError(f"--time '{value}' is not a Slurm time",
                        hint="e.g. 30, 30:00, 01:00:00, 1-00:00:00 or UNLIMITED")
    days, hours, d_minutes, d_seconds, first, second, third = m.groups()
    # Every field after the leading one is minutes or seconds (below 60), or hours after days (below 24).
    if days is not None and int(hours) >= 24:
        raise RmaxError(f"--time '{value}': {hours} hours in days-hours form", hint="hours below 24, e.g. 2-12:00:00")
    if any(f is not None and int(f) >= 60 for f in (d_minutes, d_seconds, second, third)):
        raise RmaxError(f"--time '{value}' has minutes or seconds of 60 or more", hint="e.g. 01:30:00")
    return value


def path(value: str, what: str) -> str:
    """A path in a #SBATCH line: sbatch splits directives at white space and reads quotes,
    so neither may appear, nor shell syntax a reader of the script could mistake for an
    expansion ($, backquote); Slurm's % patterns such as %j are fine."""
    check_text(value, what)
    if not value or any(c.isspace() or c in "'\"\\$`" for c in value):
        raise RmaxError(f"{what} '{value}' cannot be written into a #SBATCH line",
                        hint="a path without spaces, quotes, backslashes, $ or backquotes")
    return value


def constraint(value: str) -> str:
    """sbatch --constraint: feature names and its operators, nothing a shell or sbatch splits at."""
    check_text(value, "--constraint")
    if not _CONSTRAINT.match(value):
        raise RmaxError(f"--constraint '{value}' is not a Slurm constraint rmax writes",
                        hint="feature names (letters, digits, . _ - :) joined by & | , with [ ] ( ) and *count")
    return value


def hosts(value: str, what: str) -> str:
    """A host list (Slurm's syntax, node[01-04],login1), read by rmax's one hostlist reader; each
    host a name Slurm accepts."""
    from rmax.hostlist import expand

    check_text(value, what)
    names = expand(value, what)
    bad = next((h for h in names if not _HOST.match(h)), None)
    if not names or bad is not None:
        raise RmaxError(f"{what} '{value}' holds '{bad or ''}', which is not a host name",
                        hint="letters, digits and . _ -, e.g. node[01-04],login1")
    return value


def directive(value: str, taken: tuple[str, ...]) -> tuple[str, str | None]:
    """An extra #SBATCH line given as `--option` or `--option=value` (e.g. --gres=gpu:1): a long
    option, and a value without white space, quotes, $, backquotes or backslashes. One that rmax
    writes itself (`taken`) is refused: two lines of one option leave sbatch to take the last."""
    check_text(value, "--sbatch")
    m = _DIRECTIVE.match(value)
    if not m:
        raise RmaxError(f"--sbatch '{value}' is not an sbatch option rmax writes into a #SBATCH line",
                        hint="--option or --option=value, the value without spaces, quotes, $, "
                             "backquotes or backslashes, e.g. --sbatch --gres=gpu:1")
    if m.group(1) in taken:
        raise RmaxError(f"--sbatch '{value}': rmax writes {m.group(1)} itself",
                        hint=f"give it as rmax slurm script's own {m.group(1)} option")
    return m.group(1), m.group(2)
