"""references.toml: what each metric should read, per node class, with a tolerance either side (in
the spirit of ReFrame's performance references: a value, a lower and an upper threshold as
fractions of it, and a unit), and the fleet's tolerance: how far a node may fall behind its class.

    [fleet]
    lower = -0.10            # a node may be 10 % worse than its class median (default)
    confidence = 0.95

    [[reference]]
    metric = "stream:triad.2"   # kind:key, as `rmax accept` names it; without " at ...": any point
    class = "AMD EPYC, 2 cores, 24 GiB, veth 10000 Mb/s"   # optional: every class
    value = 35.0
    unit = "GB/s"
    lower = -0.05            # optional (no bound below); at most 0
    upper = 0.10             # optional (no bound above); at least 0

    [links]
    rate = "25gbit"          # optional: every node's link rate (else its NIC's speed, inventory)
    lower = -0.15            # a link within a switch may move this much less than its rate (default)

Read through rmax.tomlconfig (size and nesting bounded); every entry checked, an error naming it."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from rmax.errors import RmaxError
from rmax.tomlconfig import read_toml

MAX_REFERENCES = 10000
MAX_TEXT = 300
DEFAULT_FLEET_LOWER = -0.10     # worse than the class median by more than this fails
DEFAULT_CONFIDENCE = 0.95
REFERENCE_KEYS = {"metric", "class", "value", "unit", "lower", "upper", "note"}
FLEET_KEYS = {"lower", "upper", "confidence"}
LINK_KEYS = {"rate", "lower"}
# Against its rate, a link within a switch may move this much less and pass: TCP over Ethernet at MTU
# 1500 carries 1448 payload bytes in the 1538 on the wire (6 % less), and the fleet's 10 % beside it
DEFAULT_RATE_LOWER = -0.15


@dataclass(frozen=True)
class Reference:
    metric: str
    value: float
    unit: str
    lower: float | None        # fractions of value: the band is value x (1 + lower) .. value x (1 + upper)
    upper: float | None
    node_class: str | None = None
    note: str | None = None
    index: int = 0             # its place in the file, from 1, for messages
    source: str = "references.toml"

    def matches(self, metric: str, base: str, node_class: str) -> bool:
        return self.metric in (metric, base) and self.node_class in (None, node_class)

    def band(self) -> tuple[float, float]:
        return (self.value * (1 + self.lower) if self.lower is not None else -math.inf,
                self.value * (1 + self.upper) if self.upper is not None else math.inf)

    def describe(self) -> str:
        tol = "/".join(f"{100 * t:+g}%" if t is not None else "none" for t in (self.lower, self.upper))
        where = f", class {self.node_class}" if self.node_class else ""
        head = f"reference #{self.index} of {self.source}" if self.index else self.source   # 0: not from a file
        return f"{head} ({self.metric}{where}: {self.value:g} {self.unit} {tol})"


@dataclass(frozen=True)
class Fleet:
    lower: float = DEFAULT_FLEET_LOWER     # relative to the class median, in the metric's worse direction
    upper: float | None = None             # in its better direction (None: any better is fine)
    confidence: float = DEFAULT_CONFIDENCE


@dataclass(frozen=True)
class Links:
    rate: float | None = None               # bits/s of every node's link, declared (None: each NIC's speed)
    lower: float = DEFAULT_RATE_LOWER       # relative to the rate


@dataclass(frozen=True)
class References:
    references: tuple[Reference, ...] = ()
    fleet: Fleet = Fleet()
    links: Links = Links()

    def find(self, metric: str, base: str, node_class: str) -> Reference | None:
        """The reference for this metric and class: one naming the class before one for every class,
        the exact metric (with its point) before its base name."""
        got = [r for r in self.references if r.matches(metric, base, node_class)]
        return min(got, key=lambda r: (r.node_class is None, r.metric != metric, r.index), default=None)


def _number(v, what: str, lo: float, hi: float) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not lo <= v <= hi:
        raise RmaxError(f"{what} must be a number from {lo:g} to {hi:g}, not {str(v)[:40]!r}")
    return float(v)


def _text(v, what: str) -> str:
    if not isinstance(v, str) or not v.strip() or len(v) > MAX_TEXT or any(ord(c) < 32 for c in v):
        raise RmaxError(f"{what} must be one line of text of 1 to {MAX_TEXT} characters")
    return v


def parse(data: dict, source: str) -> References:
    unknown = set(data) - {"fleet", "links", "reference", "version"}
    if unknown:
        raise RmaxError(f"{source}: unknown table or key {sorted(unknown)[0][:40]!r}",
                        hint="a references file has [fleet], [links] and [[reference]] entries (docs/ACCEPT.md)")
    fleet = data.get("fleet", {})
    if not isinstance(fleet, dict) or set(fleet) - FLEET_KEYS:
        raise RmaxError(f"{source}: [fleet] takes only {', '.join(sorted(FLEET_KEYS))}")
    f = Fleet(_number(fleet.get("lower", DEFAULT_FLEET_LOWER), f"{source}: [fleet] lower", -0.99, 0),
              _number(fleet["upper"], f"{source}: [fleet] upper", 0, 100) if "upper" in fleet else None,
              _number(fleet.get("confidence", DEFAULT_CONFIDENCE), f"{source}: [fleet] confidence", 0.5, 0.9999))
    links = _links(data.get("links", {}), source)
    entries = data.get("reference", [])
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise RmaxError(f"{source}: reference must be an array of tables ([[reference]])")
    if len(entries) > MAX_REFERENCES:
        raise RmaxError(f"{source} has {len(entries)} references: more than the {MAX_REFERENCES} rmax reads")
    refs = []
    for i, e in enumerate(entries, 1):
        what = f"{source}: reference #{i}"
        extra = set(e) - REFERENCE_KEYS
        if extra:
            raise RmaxError(f"{what}: unknown key {sorted(extra)[0][:40]!r}",
                            hint=f"keys: {', '.join(sorted(REFERENCE_KEYS))}")
        for key in ("metric", "value", "unit"):
            if key not in e:
                raise RmaxError(f"{what} has no {key}")
        ref = Reference(_text(e["metric"], f"{what}: metric"), _number(e["value"], f"{what}: value", 1e-300, 1e300),
                        _text(e["unit"], f"{what}: unit"),
                        _number(e["lower"], f"{what}: lower", -1, 0) if "lower" in e else None,
                        _number(e["upper"], f"{what}: upper", 0, 1e6) if "upper" in e else None,
                        _text(e["class"], f"{what}: class") if "class" in e else None,
                        _text(e["note"], f"{what}: note") if "note" in e else None, i, source)
        if ref.lower is None and ref.upper is None:
            raise RmaxError(f"{what} has neither lower nor upper: nothing to judge against",
                            hint="e.g. lower = -0.05 (5 % below the value fails)")
        refs.append(ref)
    return References(tuple(refs), f, links)


def _links(table, source: str) -> Links:
    if not isinstance(table, dict) or set(table) - LINK_KEYS:
        raise RmaxError(f"{source}: [links] takes only {', '.join(sorted(LINK_KEYS))}")
    rate = table.get("rate")
    if rate is not None:
        from rmax.vcluster.plan import parse_rate

        rate = _number(rate, f"{source}: [links] rate (bits/s)", 8000, 1e15) if not isinstance(rate, str) else \
            float(parse_rate(_text(rate, f"{source}: [links] rate"), f"{source}: [links] rate"))
    return Links(rate, _number(table.get("lower", DEFAULT_RATE_LOWER), f"{source}: [links] lower", -0.99, 0))


def load(path: str | Path) -> References:
    return parse(read_toml(path, "references file"), Path(path).name)


def _toml_string(s: str) -> str:
    return json.dumps(s, ensure_ascii=True)     # a JSON string with ASCII escapes is a TOML basic string


def render(rows: list[dict], fleet: Fleet, note: str) -> str:
    """references.toml text: each row {metric, class, value, unit, lower, upper}."""
    lines = [f"# {line}" for line in note.splitlines()] + [
        "# rmax accept --references FILE reads it (docs/ACCEPT.md)", "", "[fleet]", f"lower = {fleet.lower!r}"]
    if fleet.upper is not None:
        lines.append(f"upper = {fleet.upper!r}")
    lines.append(f"confidence = {fleet.confidence!r}")
    for r in rows:
        lines += ["", "[[reference]]", f"metric = {_toml_string(r['metric'])}", f"class = {_toml_string(r['class'])}",
                  f"value = {float(r['value'])!r}", f"unit = {_toml_string(r['unit'])}"]
        lines += [f"{k} = {float(r[k])!r}" for k in ("lower", "upper") if r.get(k) is not None]
        if r.get("note"):
            lines.append(f"note = {_toml_string(r['note'])}")
    return "\n".join(lines) + "\n"
