"""`rmax experiment mtu`: latency, bandwidth and a short HPL under each MTU,
with the original MTUs restored afterwards whatever happens (seed 01: Kronos
gained 9.6% HPL from MTU 6000).

On a virtual cluster every link changes together: node ends, switch ports,
trunks and bridges, and the tbf shapers are re-made for the new frame size.
Real interfaces change only when the user says --yes."""

from __future__ import annotations

import subprocess
from contextlib import contextmanager
from dataclasses import dataclass

from rmax.errors import RmaxError


def parse_mtus(text: str) -> list[int]:
    try:
        mtus = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise RmaxError(f"MTU list '{text}' is not whole numbers", hint="e.g. 1500,9000") from None
    if not mtus:
        raise RmaxError("no MTU given", hint="e.g. rmax experiment mtu 1500,9000")
    for m in mtus:
        if not 576 <= m <= 65535:
            raise RmaxError(f"MTU {m} is outside 576..65535")
    return mtus


@dataclass
class LinkEnd:
    ifname: str
    ns: str | None
    shaped_bits: int | None


def vcluster_links(state) -> list[LinkEnd]:
    """Every interface of the cluster. Bridges come last: a bridge's MTU may not exceed its ports'."""
    plan = state.plan
    ends = []
    for n in plan.nodes:
        ends += [LinkEnd("eth0", n.name, plan.link_rate), LinkEnd(n.veth, None, plan.link_rate)]
    for t in plan.trunks:
        ends += [LinkEnd(t.end_a, None, plan.trunk_rate), LinkEnd(t.end_b, None, plan.trunk_rate)]
    ends += [LinkEnd(br, None, None) for br in plan.switches]
    return ends


def _mtu_of(end: LinkEnd) -> int:
    import json

    out = subprocess.run(["ip", *(["-n", end.ns] if end.ns else []), "-j", "link", "show", "dev", end.ifname],
                         capture_output=True, text=True, timeout=10)
    if out.returncode != 0:
        raise RmaxError(f"interface {end.ifname} not found" + (f" in {end.ns}" if end.ns else ""))
    return json.loads(out.stdout)[0]["mtu"]


def set_mtu(ends: list[LinkEnd], mtu: int | dict[str, int]) -> None:
    from rmax.vcluster import system as sx

    for e in ends:
        m = mtu[f"{e.ns}/{e.ifname}"] if isinstance(mtu, dict) else mtu
        sx.run(["ip", *(["-n", e.ns] if e.ns else []), "link", "set", "dev", e.ifname, "mtu", str(m)],
               f"setting MTU {m} on {e.ifname}")
        if e.shaped_bits:
            sx.tbf(e.ifname, e.shaped_bits, m, ns=e.ns)   # the bucket must hold a whole frame


@contextmanager
def mtu_changes(ends: list[LinkEnd]):
    """Yields set(mtu); on exit every interface gets its original MTU back."""
    original = {f"{e.ns}/{e.ifname}": _mtu_of(e) for e in ends}
    try:
        yield lambda mtu: set_mtu(ends, mtu)
    finally:
        set_mtu(ends, original)


def grid_for(ranks: int) -> tuple[int, int]:
    """The squarest P x Q = ranks with P <= Q (the reference's advice)."""
    p = int(ranks ** 0.5)
    while ranks % p:
        p -= 1
    return p, ranks // p


def hpl_engine() -> str:
    """rmax-hpl where it is built, else the reference HPL inside hpcc."""
    from rmax.native import executable

    try:
        executable("rmax-hpl")
        return "rmax"
    except RmaxError:
        return "hpcc"
