"""`rmax net doctor`'s rules: NIC settings that published cluster studies found costly
(Kronos: Eadline and Layton, Cluster Monkey; Helix: Barczak, Messom and Johnson).

Every finding cites the measurement behind it: the study's own numbers, and
where this cluster has stored measurements (`rmax experiment mtu`, all-pairs
matrices), those too. Rules read node reports from rmax.nic.settings only."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict, dataclass, field

from rmax.nic.settings import effective_speed

KRONOS_ITR = ("Kronos (Eadline and Layton, Cluster Monkey): with the e1000 driver's interrupt throttling off "
              "(InterruptThrottleRate=0, RxIntDelay=0) NetPIPE latency through the GigE switch fell from 117 us "
              "to 29 us and HPL rose from 12.74 to 13.26 GFLOPS (+4%)")
KRONOS_MTU = ("Kronos (Eadline and Layton, Cluster Monkey): MTU 6000 on GigE with a jumbo-capable switch raised "
              "HPL from 13.26 to 14.53 GFLOPS (+9.6%); larger MTUs helped in every test")
MISMATCH = ("a frame larger than the receiver's MTU is dropped, and TCP's path-MTU discovery does not "
            "work inside one L2 segment: large messages stall or fall back to retransmission timeouts")


@dataclass
class Finding:
    rule: str
    severity: str               # "warn" or "info"
    where: str                  # node/interface or network
    message: str
    evidence: list[str] = field(default_factory=list)
    fix: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)


def _coalescing(node: str, iface: dict) -> Finding | None:
    c = iface.get("coalesce")
    if not c:
        return None
    held = []
    if c.get("adaptive_rx"):
        held.append("adaptive-rx on")
    if c.get("rx-usecs", 0) > 0:
        held.append(f"rx-usecs {c['rx-usecs']}")
    if c.get("rx-frames", 0) > 1:
        held.append(f"rx-frames {c['rx-frames']}")
    if not held:
        return None
    return Finding("interrupt-coalescing", "warn", f"{node}/{iface['name']}",
                   f"interrupt coalescing holds received frames before interrupting ({', '.join(held)}): "
                   "it adds that delay to every MPI message on this link", [KRONOS_ITR],
                   f"ethtool -C {iface['name']} adaptive-rx off rx-usecs 0 rx-frames 1")


def diagnose(nodes: list[dict], measured: dict | None = None) -> list[Finding]:
    """Findings for node reports [{host, interfaces: [...]}]; measured: stored evidence
    ({"mtu": text, "latency": text}) from this cluster's own runs, when there is any."""
    measured = measured or {}
    out: list[Finding] = []
    by_net: dict[str, list[tuple[str, dict]]] = defaultdict(list)
    for node in nodes:
        for iface in node.get("interfaces", []):
            if iface.get("state") not in (None, "up", "unknown"):
                continue   # a down interface carries no traffic
            f = _coalescing(node["host"], iface)
            if f:
                if measured.get("latency"):
                    f.evidence.append(measured["latency"])
                out.append(f)
            for net in iface.get("networks", []):
                by_net[net].append((node["host"], iface))
    for net, members in sorted(by_net.items()):
        mtus = defaultdict(list)
        for host, iface in members:
            mtus[iface.get("mtu")].append(f"{host}/{iface['name']}")
        if len(mtus) > 1:
            detail = "; ".join(f"MTU {m}: {', '.join(w)}" for m, w in sorted(mtus.items(), key=lambda x: x[0] or 0))
            out.append(Finding("mtu-mismatch", "warn", net, f"MTUs differ within network {net} ({detail})",
                               [MISMATCH, KRONOS_MTU] + ([measured["mtu"]] if measured.get("mtu") else []),
                               f"set one MTU on every node of {net} (and the switch), e.g. ip link set IFACE mtu "
                               f"{max(m for m in mtus if m)}"))
        speeds = {effective_speed(iface) for _, iface in members if effective_speed(iface)}
        if len(speeds) > 1:
            out.append(Finding("speed-mismatch", "warn", net,
                               f"link speeds differ within network {net}: {', '.join(f'{s} Mb/s' for s in sorted(speeds))}"
                               " (a shaper's rate where one is set)",
                               ["the slowest link caps every collective that crosses it (Helix, Barczak et al.: its "
                                "collectives ran at the pace of their slowest path)"],
                               "check cables, switch ports and auto-negotiation (ethtool IFACE)"))
        if len(mtus) == 1 and next(iter(mtus)) == 1500 and len(members) > 1 and \
                all((effective_speed(i) or 0) >= 1000 for _, i in members):
            out.append(Finding("jumbo-frames", "info", net,
                               f"network {net} runs at MTU 1500 on links of 1 Gb/s or more",
                               [KRONOS_MTU] + ([measured["mtu"]] if measured.get("mtu") else []),
                               "measure it: rmax experiment mtu 1500,9000"))
        for host, iface in members:
            off = iface.get("offloads") or {}
            disabled = [k for k in ("tcp-segmentation-offload", "generic-receive-offload") if off.get(k) is False]
            if disabled and iface.get("driver") not in ("veth", "bridge"):
                out.append(Finding("offloads-off", "info", f"{host}/{iface['name']}",
                                   f"{', '.join(disabled)} off: the CPU segments or reassembles every packet",
                                   ["costs bandwidth on CPU-bound nodes; latency is unaffected"],
                                   f"ethtool -K {iface['name']} tso on gro on"))
    return out
