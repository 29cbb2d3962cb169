"""MTUs read, set and restored for `rmax experiment mtu` (latency, bandwidth and a
short HPL under each MTU, the original MTUs restored afterwards whatever happens:
nic/mtu_experiment.py; Kronos gained 9.6% HPL from MTU 6000: Eadline and Layton,
Cluster Monkey).

On a virtual cluster every link changes together: node ends, switch ports,
trunks and bridges, and the tbf shapers are re-made for the new frame size.
Real interfaces change only when the user says --yes; they are read and set on
every host through rmax's launch layer (one single-rank job per host, running
`ip`), and restored on every host at the end."""

from __future__ import annotations

import re
import subprocess
from contextlib import contextmanager
from dataclasses import dataclass

from rmax.errors import RmaxError, RunFailed


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


def link_mtus(ends: list[LinkEnd]) -> dict[str, int]:
    """The current MTU of every interface, by 'namespace/name' (as set_mtu takes them)."""
    return {f"{e.ns}/{e.ifname}": _mtu_of(e) for e in ends}


@contextmanager
def mtu_changes(ends: list[LinkEnd], original: dict[str, int]):
    """Yields set(mtu); on exit every interface gets its original MTU back (as link_mtus read them
    before anything changed)."""
    try:
        yield lambda mtu: set_mtu(ends, mtu)
    finally:
        set_mtu(ends, original)


# Real interfaces on other hosts ------------------------------------------------

IFNAME = re.compile(r"^[A-Za-z0-9_.:@-]{1,15}$")   # Linux: at most IFNAMSIZ - 1 = 15 bytes
HOST_TIMEOUT = 60.0                                   # seconds for one `ip` command on one host
_IP_ERRORS = ("RTNETLINK answers", "Error:", "Device ", "Cannot ", "ip: ")   # how iproute2's errors start
_LINK_LINE = re.compile(r"^\d+:\s*([^:@\s]+)(?:@\S+)?:.*\bmtu (\d+)\b")


def check_interfaces(names) -> list[str]:
    """Interface names as Linux allows them (1-15 characters of A-Z a-z 0-9 _ . : @ -)."""
    for n in names:
        if not IFNAME.match(n):
            raise RmaxError(f"'{n}' is not a valid interface name",
                            hint="1 to 15 characters of letters, digits and _ . : @ -")
    return list(dict.fromkeys(names))


def _on_host(host: str, argv: list[str], launcher: str | None, what: str, timeout: float = HOST_TIMEOUT) -> str:
    """Run argv as one rank on host through the launcher; its stdout, or an error naming the host."""
    from rmax.launch import Host, LaunchSpec, prepare, run_job

    spec = LaunchSpec(program=list(argv), np=1, hosts=[Host(host, 1)], bind="none", blas_kernels=False)
    job = run_job(prepare(spec, launcher), timeout, env=spec.rank_env(), spec=spec)
    if not job.ok:
        # ip's own message comes before the launcher's framed footer ("Exit code: 1"): prefer it.
        cause = next((l.strip() for l in job.stderr_tail if l.strip().startswith(_IP_ERRORS)), None)
        if cause and not job.timed_out:
            raise RunFailed(f"{what} on host {host} failed: {cause}")
        raise job.failure(f"{what} on host {host}")
    return job.stdout


def parse_link_mtus(text: str) -> dict[str, int]:
    """{interface: MTU} from `ip -o link show` lines ('2: eth0@if7: <...> mtu 1500 qdisc ...')."""
    out = {}
    for line in text.splitlines():
        m = _LINK_LINE.match(line.strip())
        if m:
            out[m.group(1)] = int(m.group(2))
    return out


def host_mtus(host: str, interfaces: list[str], launcher: str | None) -> dict[str, int]:
    """The current MTU of each interface on host (one launch). `ip` asks the kernel over netlink, so it
    answers for the host's own network namespace (sysfs would show the namespace that mounted /sys)."""
    found = parse_link_mtus(_on_host(host, ["ip", "-o", "link", "show"], launcher,
                                     f"reading the MTU of {', '.join(interfaces)}"))
    missing = [i for i in interfaces if i not in found]
    if missing:
        raise RmaxError(f"interface {', '.join(missing)} not found on host {host}",
                        hint=f"`ip link` on {host} lists its interfaces")
    return {i: found[i] for i in interfaces}


def set_host_mtu(host: str, interface: str, mtu: int, launcher: str | None) -> None:
    _on_host(host, ["ip", "link", "set", "dev", interface, "mtu", str(mtu)], launcher,
             f"setting MTU {mtu} on interface {interface}")


@contextmanager
def host_mtu_changes(hosts: list[str], interfaces: list[str], launcher: str | None,
                     original: dict[str, dict[str, int]]):
    """Yields apply(mtu), which sets mtu on every interface of every host and returns what the
    hosts report afterwards ({host: {interface: mtu}}). The original MTUs are read before (as
    host_mtus read them), so nothing changes when an interface is missing. On exit every host
    gets its original MTUs back; every host is tried even when one fails, and the hosts that
    could not be restored are named in one error."""

    def apply(mtu: int) -> dict[str, dict[str, int]]:
        for h in hosts:
            for i in interfaces:
                set_host_mtu(h, i, mtu, launcher)
        return {h: host_mtus(h, interfaces, launcher) for h in hosts}

    pending: BaseException | None = None
    try:
        yield apply
    except BaseException as e:
        pending = e
        raise
    finally:
        failed = []
        for h in hosts:
            for i in interfaces:
                try:
                    set_host_mtu(h, i, original[h][i], launcher)
                except (RmaxError, OSError) as e:
                    failed.append((h, i, e))
        if failed:
            names = ", ".join(dict.fromkeys(h for h, _, _ in failed))
            why = f"; first cause: {failed[0][2]}" + (f"; the experiment had stopped: {pending}" if pending else "")
            raise RmaxError(f"could not restore the MTU on host {names}{why}",
                            hint="restore by hand: " + "; ".join(f"on {h}: ip link set dev {i} mtu {original[h][i]}"
                                                                 for h, i, _ in failed))
