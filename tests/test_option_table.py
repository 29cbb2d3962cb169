"""One option table: every family's options that a native kernel also takes have the kernel's
default, range and type, as the kernel's own table describes them (`--describe`). Changing a
default or a range on one side alone fails here.

A family names the kernel its options mirror (Family.native); its option `x_y` (or its
`flag`, "--no-x") is the kernel's `--x-y`; options the kernel does not have are the family's own."""

from __future__ import annotations

import math
import re
import subprocess

import click
import pytest

from rmax.bench.family import UNSET, option_fields
from rmax.families import families
from rmax.bench.netlaunch import MAX_MESSAGE
from rmax.native import describe, executable
from rmax.params import Names, Number, NumberList, Shapes, Size, SizeList

FAMILIES = families()


def py_kind(f, info):
    """(kind, lo, hi, lo_open, choices) of a Python option, from its click type or its default."""
    t = info.type
    if isinstance(t, SizeList):
        return "size_list", t.lo, t.hi, False, None
    if isinstance(t, Size):
        return "size", t.lo, t.hi, False, None
    if isinstance(t, NumberList):
        return ("int_list" if t.item.integer else "double_list"), t.item.lo, t.item.hi, t.item.lo_open, None
    if isinstance(t, Number):
        return ("int" if t.integer else "double"), t.lo, t.hi, t.lo_open, None
    if isinstance(t, click.Choice):
        return "choice", None, None, False, set(t.choices)
    if isinstance(t, (Names, Shapes)):
        return "names", None, None, False, set(t.known) if isinstance(t, Names) and t.known else None
    d = f.default
    if isinstance(d, bool):
        return "flag", None, None, False, None
    if isinstance(d, float):
        return "double", None, None, False, None
    if isinstance(d, int):
        return "int", None, None, False, None
    return "string", None, None, False, None


# which Python kinds may carry each C type (sizes the kernel parses may be plain counts in Python)
COMPATIBLE = {
    "flag": {"flag"},
    "int": {"int"},
    "double": {"double"},
    "size": {"size", "int"},
    "size_list": {"size_list", "int_list"},
    "choice": {"choice"},
    "string": {"names", "string", "choice"},
}


def pairs(fam):
    """(python field, its OptionInfo, the kernel's option, negated) for every option both sides have."""
    table = describe(*fam.native)
    out = []
    for f, info in option_fields(fam.Options):
        if info.flag and info.flag.lstrip("-") in table:
            name = info.flag.lstrip("-")
            out.append((f, info, table[name], info.flag.startswith("--no-") and not f.name.startswith("no_")))
        elif f.name.replace("_", "-") in table:
            out.append((f, info, table[f.name.replace("_", "-")], False))
    return out


def as_kernel_default(value, c, negated):
    """A Python default as the kernel's table would hold it."""
    if negated:
        return not value
    if value == () or value is None:
        return None
    if isinstance(value, tuple) and c["type"] == "string":
        return ",".join(str(v) for v in value)
    if isinstance(value, tuple):
        return list(value)
    return value


def disagreements(fam) -> list[str]:
    out = []
    for f, info, c, negated in pairs(fam):
        name = f"{fam.name}: {f.name} (--{c['name']})"
        kind, lo, hi, lo_open, choices = py_kind(f, info)
        if kind not in COMPATIBLE[c["type"]]:
            out.append(f"{name}: type {kind} in Python, {c['type']} in the kernel")
        if c["type"] == "choice" and choices is not None and choices != set(c["choices"]):
            out.append(f"{name}: choices {sorted(choices)} in Python, {sorted(c['choices'])} in the kernel")
        if c["min"] is not None and (lo, hi, lo_open) != (c["min"], c["max"], False):
            shown = f"{'(' if lo_open else '['}{lo}, {hi}]" if lo is not None else "no range"
            out.append(f"{name}: range {shown} in Python, [{c['min']:g}, {c['max']:g}] in the kernel")
        want = as_kernel_default(f.default, c, negated)
        same = (want == c["default"] if not isinstance(want, float) or c["default"] is None
                else math.isclose(want, c["default"], rel_tol=1e-12))
        if not same:
            out.append(f"{name}: default {want!r} in Python, {c['default']!r} in the kernel")
        if info.quick is not UNSET and lo is not None and info.quick is not None and not negated:
            quick = info.quick if isinstance(info.quick, tuple) else (info.quick,)
            if any(q < lo or q > hi for q in quick):
                out.append(f"{name}: quick value {info.quick!r} is outside the kernel's range")
    return out


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_family_options_match_the_kernel_table(name):
    fam = FAMILIES[name]
    assert hasattr(type(fam), "native"), (
        f"family {name} does not say which native option table its Options mirror: set "
        f"`native = (\"rmax-EXE\", \"SUBCOMMAND\")` on the family (None when its options are not a kernel's)")
    if fam.native is None:
        return
    assert pairs(fam), f"family {name}: no option shared with {' '.join(fam.native)} (is `native` right?)"
    bad = disagreements(fam)
    assert not bad, "\n".join(bad)


def commands(exe: str) -> list[str]:
    usage = subprocess.run([executable(exe), "--help"], capture_output=True, text=True, timeout=30).stdout
    return re.findall(r"^  (\S+) ", usage.split("commands:", 1)[1], re.M)


@pytest.mark.parametrize("exe", ["rmax-node", "rmax-net", "rmax-hpcc"])
def test_every_subcommand_describes_its_table(exe):
    cmds = commands(exe)
    assert cmds, f"{exe} --help lists no commands"
    for cmd in cmds:
        table = describe(exe, cmd)
        assert table, f"{exe} {cmd}: no options"
        for o in table.values():
            assert o["type"] in COMPATIBLE and o["help"], (cmd, o)
            if o["min"] is not None:
                assert o["min"] <= o["max"], (cmd, o)
                defaults = o["default"] if isinstance(o["default"], list) else [o["default"]]
                assert all(o["min"] <= d <= o["max"] for d in defaults if d is not None), (cmd, o)


def test_the_message_limit_lives_once():
    """Every message size rmax-net takes has the one limit, and the Python side's is that one."""
    limits = {(cmd, o["name"]): o["max"] for cmd in commands("rmax-net") for o in describe("rmax-net", cmd).values()
              if o["unit"] == "bytes" and "size" in o["name"] and o["name"] != "window-bytes"}
    assert limits and set(limits.values()) == {MAX_MESSAGE}, limits


def test_describe_gives_the_table_defaults_not_the_arguments():
    out = subprocess.run([executable("rmax-node"), "cpurate", "--budget", "7", "--describe"], capture_output=True,
                         text=True, timeout=30)
    assert out.returncode == 0
    assert '"name":"budget"' in out.stdout and '"default":7' not in out.stdout
