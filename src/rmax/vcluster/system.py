"""Thin wrappers over ip, tc, unshare and /etc/hosts; argv lists only.

Every remover tolerates an object that is already gone: that is what makes
`down` idempotent and able to finish an `up` that crashed half-way."""

from __future__ import annotations

import os
import shutil
import subprocess
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


def run(argv: list[str], what: str) -> str:
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    if proc.returncode != 0:
        msg = (proc.stderr.strip().splitlines() or ["no message"])[-1]
        raise RmaxError(f"{what} failed: {msg}", hint="command: " + " ".join(argv))
    return proc.stdout


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


def hosts_add(cluster: str, entries: list[tuple[str, str]]) -> None:
    begin, end = _markers(cluster)
    hosts_remove(cluster)
    text = HOSTS_FILE.read_text() if HOSTS_FILE.exists() else ""
    if text and not text.endswith("\n"):
        text += "\n"
    block = [begin, *(f"{addr} {name}" for addr, name in entries), end]
    # Written in place, not renamed over: /etc/hosts is often a bind mount.
    HOSTS_FILE.write_text(text + "\n".join(block) + "\n")


def hosts_remove(cluster: str) -> None:
    if not HOSTS_FILE.exists():
        return
    begin, end = _markers(cluster)
    lines = HOSTS_FILE.read_text().splitlines(keepends=True)
    out, inside, changed = [], False, False
    for line in lines:
        if line.strip() == begin:
            inside, changed = True, True
            continue
        if inside:
            if line.strip() == end:
                inside = False
            continue
        out.append(line)
    if changed:
        HOSTS_FILE.write_text("".join(out))
