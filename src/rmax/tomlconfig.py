"""TOML files a user names (agent configuration, cluster.toml, a topology file): read whole, or
refused in one line naming the file: too large, nested too deep, or not valid TOML.

tomllib parses arrays and inline tables by recursion, so 2000 nested `[` ended in a
RecursionError, and its time grows with the square of a dotted key's length (32000 parts: ten
minutes): both are measured here first, by a scan that does not recurse. The parsed value is
measured as well: whatever reads it (or prints it in an error) may recurse."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from rmax.errors import RmaxError
from rmax.textfile import check_input, read_text

MAX_BYTES = 1 << 20     # far above any configuration or a switch list of 50,000 nodes
MAX_DEPTH = 16          # tables, arrays and dotted keys within one another: real files use 3


# What the scan looks at: strings and comments (skipped whole), brackets, and dotted names (a key
# or a number: its parts counted). Possessive and look-behind: no backtracking on long runs.
_PART = r"""(?:[A-Za-z0-9_+-]++|"(?:[^"\\\n]|\\.)*+"|'[^'\n]*+')"""
_TOKENS = re.compile(r'"""(?:[^"\\]|\\.|"(?!""))*+(?:"""|$)' r"|'''.*?(?:'''|$)"
                     rf"|(?P<dotted>(?<![A-Za-z0-9_+-]){_PART}(?:[ \t]*+\.[ \t]*+{_PART})++)"
                     r"""|"(?:[^"\\\n]|\\.)*+"?|'[^'\n]*+'?|#[^\n]*+|(?P<bracket>[\[\]{}])""", re.S)
_PARTS = re.compile(_PART)


def _scan_depth(text: str) -> int:
    """The deepest nesting of [ and { outside strings and comments, or the most parts of a dotted
    key (a number has at most two), whichever is more."""
    depth = deepest = 0
    for m in _TOKENS.finditer(text):
        if m.lastgroup == "dotted":
            deepest = max(deepest, len(_PARTS.findall(m.group())))
        elif m.lastgroup == "bracket":
            if m.group() in "[{":
                depth += 1
                deepest = max(deepest, depth)
            else:
                depth = max(0, depth - 1)
    return deepest


def _value_depth(data: dict) -> int:
    deepest, stack = 0, [(data, 1)]
    while stack:
        value, depth = stack.pop()
        deepest = max(deepest, depth)
        if depth > MAX_DEPTH:
            break
        children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
        stack.extend((v, depth + 1) for v in children if isinstance(v, (dict, list)))
    return deepest


def read_toml(path: str | Path, what: str) -> dict:
    """The parsed TOML of the user's file `path` (`what` names it in errors: 'cluster file')."""
    p = check_input(path, what)
    size = p.stat().st_size
    if size > MAX_BYTES:
        raise RmaxError(f"{what} {p} is {size} bytes: larger than the {MAX_BYTES >> 20} MiB rmax reads as TOML")
    text = read_text(p, what)
    if _scan_depth(text) > MAX_DEPTH:
        raise RmaxError(f"{what} {p} nests arrays or tables more than {MAX_DEPTH} deep")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise RmaxError(f"{what} {p} is not valid TOML: {e}") from None
    except RecursionError:      # the scan above errs on the safe side; this is a last guard
        raise RmaxError(f"{what} {p} nests arrays or tables too deep") from None
    if _value_depth(data) > MAX_DEPTH:
        raise RmaxError(f"{what} {p} nests tables more than {MAX_DEPTH} deep")
    return data
