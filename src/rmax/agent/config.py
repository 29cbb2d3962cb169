"""The agent's configuration: command-line options over a small TOML file over defaults.

Every value is checked here, before anything is measured or served, so bad configuration is
one error line (exit 2) and never a half-started daemon."""

from __future__ import annotations

import ipaddress
import math
import re
from dataclasses import dataclass, fields, replace
from pathlib import Path

from rmax.errors import RmaxError
from rmax.tomlconfig import read_toml

DEFAULT_PORT = 9477
NODE_PROBES = ("peakflops", "dgemm", "stream", "memlat")
PEER_PROBE = "pingpong"
MAX_NAMES = 1024        # probes or peers in one list
SLURM_MODES = ("auto", "on", "off")


@dataclass(frozen=True)
class AgentConfig:
    interval: float = 900.0        # seconds from the start of one probe set to the next
    max_load: float = 0.5          # idle: fewer runnable tasks of other processes than this, on average
    window: float = 3.0            # seconds over which that load is averaged
    retry: float = 60.0            # seconds before a busy node is looked at again
    listen: str = f"127.0.0.1:{DEFAULT_PORT}"
    probes: tuple[str, ...] = NODE_PROBES
    peers: tuple[str, ...] = ()
    launcher: str | None = None    # for the ping-pong to peers; None: mpirun, or srun inside Slurm
    recent: int = 3                # latest probe values tested against the baseline
    history: int = 50              # earlier values that form the baseline
    min_history: int = 8           # fewer baseline values than this: no verdict yet
    alpha: float = 0.01            # significance level of the drift test
    min_change: float = 10.0       # percent: a significant shift smaller than this is not drift
    slurm: str = "auto"            # auto: ask squeue when Slurm is configured here; on: must answer; off
    sets: int = 0                  # stop after this many complete probe sets (0: never)
    probe_timeout: float = 120.0   # seconds before a hung probe is killed
    # the health check's own criteria (rmax agent check), judged before any probe and without a baseline:
    unhealthy_load: float = 1.0    # runnable tasks of other processes, with no Slurm job on the node: a runaway
    max_throttled: float = 20.0    # percent of the load window a CPU quota throttled the check's cgroup
    min_cpu_quota: float = 0.5     # CPUs: a CPU quota on the check's cgroup below this is unhealthy
    textfile: str | None = None    # node_exporter's textfile folder: the metrics also written there as rmax.prom

    @property
    def min_shift(self) -> float:
        """min_change as a fraction of the baseline, as drift.judge and fleet.rank take it."""
        return self.min_change / 100

    @property
    def address(self) -> tuple[str, int]:
        return parse_listen(self.listen)

    @property
    def probe_names(self) -> tuple[str, ...]:
        """The probe set in order: the node's own probes, then the ping-pong when peers are named."""
        return tuple(p for p in self.probes if p != PEER_PROBE) + ((PEER_PROBE,) if self.peers else ())


DAY = 86400.0


def _shown(v) -> str:
    """A refused value as an error shows it: a 5000-digit number or a long list cut short."""
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def _positive(most: float):
    """Seconds and loads: positive and at most `most`, so that no deadline computed from them
    overflows a timestamp (interval = 1e308 did) and no wait lasts for ever."""
    def check(name, v):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v <= most:   # NaN fails too
            raise RmaxError(f"{name} must be a positive number no larger than {most:g}, not {_shown(v)}")
        return float(v)
    return check


def _count(least, most):
    """Counts of values and sets: bounded, so a store query's LIMIT fits SQLite's integer and the
    drift test's work stays small."""
    def check(name, v):
        if isinstance(v, bool) or not isinstance(v, int) or not least <= v <= most:
            raise RmaxError(f"{name} must be a whole number from {least} to {most}, not {_shown(v)}")
        return v
    return check


def _alpha(name, v):
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v < 0.5:
        raise RmaxError(f"{name} must be a significance level between 0 and 0.5, not {_shown(v)}")
    return float(v)


def _percent(name, v):
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v < 100:   # NaN fails too
        raise RmaxError(f"{name} must be a percentage from 0 to below 100, not {_shown(v)}")
    return float(v)


def _listen(name, v):
    if not isinstance(v, str):
        raise RmaxError(f"{name} must be ADDR:PORT, not {_shown(v)}")
    parse_listen(v, name)
    return v


def _names(name, v):
    items = v.split(",") if isinstance(v, str) else v
    if not isinstance(items, (list, tuple)) or not all(isinstance(i, str) for i in items):
        raise RmaxError(f"{name} must be a list of names, not {_shown(v)}")
    if len(items) > MAX_NAMES:
        raise RmaxError(f"{name} names {len(items)} items: more than the {MAX_NAMES} accepted")
    return tuple(i.strip() for i in items if i.strip())


def _probes(name, v):
    chosen = _names(name, v)
    known = (*NODE_PROBES, PEER_PROBE)
    for p in chosen:
        if p not in known:
            raise RmaxError(f"{name}: unknown probe {_shown(p)}", hint=f"probes: {', '.join(known)}")
    if not chosen:
        raise RmaxError(f"{name}: no probe chosen", hint=f"probes: {', '.join(known)}")
    return chosen


def _peers(name, v):
    from rmax.hostlist import expand

    # a text is one host list in Slurm's syntax, whose commas may sit inside brackets: node[01-04,07]
    peers: list[str] = []
    for item in _names(name, [v] if isinstance(v, str) else v):
        peers += expand(item, name, MAX_NAMES - len(peers))
    return tuple(peers)


def _launcher(name, v):
    if v is None:
        return None
    from rmax.launch import REGISTRY

    if not isinstance(v, str) or v not in REGISTRY or v == "local":
        raise RmaxError(f"{name}: {_shown(v)} is not an MPI launcher",
                        hint=f"one of: {', '.join(sorted(n for n in REGISTRY if n != 'local'))}")
    return v


def _folder(name, v):
    if not isinstance(v, str) or not v.strip() or "\0" in v:
        raise RmaxError(f"{name} must be a folder's path, not {_shown(v)}")
    return v


def _choice(choices):
    def check(name, v):
        if not isinstance(v, str) or v not in choices:
            raise RmaxError(f"{name} must be one of {', '.join(choices)}, not {_shown(v)}")
        return v
    return check


# The ranges (docs/AGENT.md): far beyond any useful setting, small enough for every computation.
CHECKS = {"interval": _positive(31 * DAY), "max_load": _positive(1e6), "window": _positive(600.0),
          "retry": _positive(DAY), "listen": _listen, "probes": _probes, "peers": _peers, "launcher": _launcher,
          "recent": _count(1, 1000), "history": _count(2, 10000), "min_history": _count(2, 10000), "alpha": _alpha,
          "min_change": _percent, "slurm": _choice(SLURM_MODES), "sets": _count(0, 1 << 31),
          "probe_timeout": _positive(DAY), "textfile": _folder, "unhealthy_load": _positive(1e6),
          "max_throttled": _percent, "min_cpu_quota": _positive(1e6)}
assert set(CHECKS) == {f.name for f in fields(AgentConfig)}


FLOATS = ("interval", "max_load", "window", "retry", "alpha", "min_change", "probe_timeout", "unhealthy_load",
          "max_throttled", "min_cpu_quota")
INTEGERS = ("recent", "history", "min_history", "sets")


def _from_text(name: str, key: str, text: str):
    """An option's text as the number the setting holds (options arrive as text, so that a bad
    number is this module's one-line error like any other bad value)."""
    try:
        return float(text) if key in FLOATS else int(text)
    except ValueError:
        kind = "number" if key in FLOATS else "whole number"
        raise RmaxError(f"{name}: {_shown(text)} is not a {kind}") from None


def parse_listen(text: str, what: str = "--listen") -> tuple[str, int]:
    """'ADDR:PORT' or '[V6ADDR]:PORT' -> (address, port); the address is an IP literal, so what
    the agent binds to is exactly what was asked for (port 0: any free port)."""
    m = re.fullmatch(r"\[([0-9A-Fa-f:.]+)\]:([0-9]{1,5})|([0-9.]+|localhost):([0-9]{1,5})", text.strip())
    if not m:
        raise RmaxError(f"{what}: {_shown(text)} is not ADDR:PORT", hint="e.g. 127.0.0.1:9477, 0.0.0.0:9477 or [::1]:9477")
    addr, port = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
    addr = "127.0.0.1" if addr == "localhost" else addr
    try:
        ipaddress.ip_address(addr)
    except ValueError:
        raise RmaxError(f"{what}: '{addr}' is not an IP address", hint="e.g. 127.0.0.1 or 0.0.0.0") from None
    if not 0 <= int(port) <= 65535:
        raise RmaxError(f"{what}: port {port} is not between 0 and 65535")
    return addr, int(port)


def read_file(path: str | Path) -> dict:
    """The [agent] table of a TOML file (or the whole file when it has no such table)."""
    p = Path(path)
    data = read_toml(p, "configuration file")
    table = data.get("agent", data)
    if not isinstance(table, dict):
        raise RmaxError(f"configuration file {p}: [agent] must be a table")
    return {k.replace("-", "_"): v for k, v in table.items()}


def build(file_values: dict | None = None, options: dict | None = None, source: str = "config") -> AgentConfig:
    """Defaults, then the file's values, then the options given on the command line (None: not given)."""
    cfg = AgentConfig()
    for origin, values in ((source, file_values or {}), ("option", options or {})):
        changes = {}
        for key, value in values.items():
            if value is None:
                continue
            if key not in CHECKS:
                raise RmaxError(f"{origin}: unknown setting '{key}'", hint=f"settings: {', '.join(CHECKS)}")
            name = f"--{key.replace('_', '-')}" if origin == "option" else f"{origin}: {key}"
            if origin == "option" and isinstance(value, str) and key in (*FLOATS, *INTEGERS):
                value = _from_text(name, key, value)
            changes[key] = CHECKS[key](name, value)
        cfg = replace(cfg, **changes)
    if PEER_PROBE in cfg.probes and not cfg.peers:
        raise RmaxError(f"the {PEER_PROBE} probe needs peers", hint="name them with --peers host1,host2")
    if cfg.min_history > cfg.history:
        raise RmaxError(f"min_history ({cfg.min_history}) cannot exceed history ({cfg.history})")
    # The rank test's smallest p-value, all recent values below every baseline value, is 1 / C(n + k, k)
    # (exact, and quick within the ranges above: millions ran for minutes).
    p_min = 1 / math.comb(cfg.min_history + cfg.recent, cfg.recent)
    if p_min >= cfg.alpha:
        raise RmaxError(f"with recent = {cfg.recent} and min_history = {cfg.min_history} the drift test can never "
                        f"reach alpha = {cfg.alpha:g} (its smallest p-value is {p_min:.3g})",
                        hint="raise min_history or recent, or alpha")
    return cfg
