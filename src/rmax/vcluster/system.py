"""Thin wrappers over ip, tc, unshare and /etc/hosts; argv lists only.

Every remover tolerates an object that is already gone: that is what makes
`down` idempotent and able to finish an `up` that crashed half-way."""

from __future__ import annotations

import fcntl
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

from rmax.errors import RmaxError

HOSTS_FILE = Path(os.environ.get("RMAX_HOSTS_FILE", "/etc/hosts"))
TOOLS = {"ip": "iproute2", "tc": "iproute2", "bridge": "iproute2", "unshare": "util-linux",
         "nsenter": "util-linux", "hostname": "hostname"}


def require_root(what: str) -> None:
    if os.geteuid() != 0:
        raise RmaxError(f"{what} needs root: creating network namespaces, bridges and veth pairs "
                        "requires CAP_NET_ADMIN and CAP_SYS_ADMIN, which this user does not have",
                        hint="run it as root (e.g. with sudo)")


def require_tools(*names: str) -> None:
    for n in names:
        if not shutil.which(n):
            raise RmaxError(f"'{n}' not found: the virtual cluster needs it", hint=f"apt-get install {TOOLS[n]}")


def run(argv: list[str], what: str, input: str | None = None) -> str:
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=30, input=input)
    if proc.returncode != 0:
        msg = (proc.stderr.strip().splitlines() or ["no message"])[-1]
        raise RmaxError(f"{what} failed: {msg}", hint="command: " + " ".join(argv))
    return proc.stdout


def static_neighbours(ns: str, entries: list[tuple[str, str]]) -> None:
    """Permanent neighbour entries (IPv4 address, MAC) on eth0 in namespace ns, in one `ip -batch`.
    Every node of a virtual cluster shares one kernel's packet backlog, and when dozens of ranks
    open connections at once their ARP broadcasts (flooded to every port of every bridge) are lost
    with them: a neighbour left unresolved fails connect() at once, which Open MPI's tcp btl never
    retries (a 64-rank job hung) and UCX reports as "Destination is unreachable". A real node's
    ARP has its own NIC and CPU; static entries stand for the resolution that then succeeds."""
    lines = "".join(f"neigh replace {ip} lladdr {mac} dev eth0 nud permanent\n" for ip, mac in entries)
    run(["ip", "-n", ns, "-batch", "-"], f"setting the neighbours of {ns}", input=lines)


def quiet(argv: list[str]) -> bool:
    """Run a best-effort command; True when it succeeded."""
    try:
        return subprocess.run(argv, capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def ns_in(ns: str | None) -> list[str]:
    return ["-n", ns] if ns else []


def link_exists(name: str, ns: str | None = None) -> bool:
    return quiet(["ip", *ns_in(ns), "link", "show", "dev", name])


def netns_exists(name: str) -> bool:
    return Path("/run/netns", name).exists()


def delete_link(name: str, ns: str | None = None) -> None:
    if link_exists(name, ns):
        quiet(["ip", *ns_in(ns), "link", "del", "dev", name])


def delete_netns(name: str) -> None:
    if netns_exists(name):
        quiet(["ip", "netns", "del", name])


def make_uts(path: Path, hostname: str) -> None:
    """A persistent UTS namespace (bind-mounted on path) whose host name is the node's,
    so ranks in different namespaces see different host names, as on real nodes."""
    path.touch()
    run(["unshare", f"--uts={path}", "hostname", hostname], f"creating the UTS namespace of {hostname}")


def delete_uts(path: Path) -> None:
    if path.exists():
        quiet(["umount", str(path)])
        try:
            path.unlink()
        except OSError:
            pass


ETHERNET_HEADER = 14        # bytes tbf counts in a frame beyond the MTU
SHAPE_BURST_BYTES = 4096    # at most this much may leave ahead of the rate (1/16 of 64 KiB)


def tbf_burst(mtu: int) -> int:
    """Bytes tbf's bucket holds. An idle link refills the bucket, and a message
    smaller than the bucket then leaves at veth speed: with a 2 ms bucket a
    1 Gbit/s link carried 64 KiB messages at 2-12x its rate. So the bucket is
    4 KiB (6% of a 64 KiB message), or one frame where a frame is larger: tbf
    drops a frame its bucket cannot hold (tc-tbf(8), burst)."""
    return max(SHAPE_BURST_BYTES, mtu + ETHERNET_HEADER)


def tbf(dev: str, rate_bits: int, mtu: int, ns: str | None = None) -> None:
    """Shape dev's egress to rate_bits with a token bucket (netem is not available;
    tbf is what real rate limits look like anyway). The queue holds 50 ms of
    traffic; the bucket is small (tbf_burst), so every message from 64 KiB up
    moves at the rate, not at the speed of veth."""
    run(["tc", *ns_in(ns), "qdisc", "replace", "dev", dev, "root", "tbf", "rate", f"{rate_bits}bit",
         "burst", str(tbf_burst(mtu)), "latency", "50ms"], f"shaping {dev} to {rate_bits} bit/s")


# /etc/hosts: a marked block per cluster, so node names resolve for every tool
# (Open MPI, `rmax launch check`'s resolvability check, ping) and removal is exact.

def _markers(cluster: str) -> tuple[str, str]:
    return f"# rmax-vcluster {cluster} begin", f"# rmax-vcluster {cluster} end"


def _without(text: str, cluster: str) -> str:
    begin, end = _markers(cluster)
    out, inside = [], False
    for line in text.splitlines(keepends=True):
        if line.strip() == begin:
            inside = True
        elif inside:
            inside = line.strip() != end
        else:
            out.append(line)
    return "".join(out)


def _edit_hosts(change) -> None:
    """Rewrite /etc/hosts as change(text) under an exclusive lock, so that clusters coming up and
    going down at the same time never lose each other's blocks. Written in place (it is often a bind
    mount, which a rename would not replace), over the old text and then cut to length: a reader
    never meets the empty file that truncating first would show (a name lookup failing mid-job)."""
    HOSTS_FILE.touch(exist_ok=True)
    with open(HOSTS_FILE, "r+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        text = f.read()
        new = change(text)
        if new != text:
            f.seek(0)
            f.write(new)
            f.truncate()


def hosts_add(cluster: str, entries: list[tuple[str, str]]) -> None:
    begin, end = _markers(cluster)
    block = "\n".join([begin, *(f"{addr} {name}" for addr, name in entries), end]) + "\n"

    def add(text: str) -> str:
        text = _without(text, cluster)
        return text + ("\n" if text and not text.endswith("\n") else "") + block

    _edit_hosts(add)


def hosts_remove(cluster: str) -> None:
    if HOSTS_FILE.exists():
        _edit_hosts(lambda text: _without(text, cluster))


def netns_pids(name: str) -> list[int]:
    """The processes living in network namespace `name` (what `ip netns pids` lists)."""
    if not netns_exists(name):
        return []
    try:
        out = subprocess.run(["ip", "netns", "pids", name], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [int(p) for p in out.split() if p.isdigit()]


def kill_netns_processes(name: str) -> list[int]:
    """SIGKILL every process left in a node's namespace (job steps, ranks), by PID: a namespace
    that still holds a process outlives `ip netns del`."""
    pids = netns_pids(name)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    deadline = time.monotonic() + 10
    while netns_pids(name) and time.monotonic() < deadline:
        time.sleep(0.05)
    return pids
