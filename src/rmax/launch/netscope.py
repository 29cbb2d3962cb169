"""The network an MPI job may listen on: loopback for one host, the interface
that carries the hosts' addresses for several (or the one `--net-if` names).

Launcher options alone cannot keep MPI off the other networks: Open MPI 4.1's
out-of-band listener and TCP BTL bind the wildcard address whatever
oob_tcp_if_include / btl_tcp_if_include say (open-mpi/ompi issues 12668 and
14441), and MPICH's Hydra binds 0.0.0.0 whatever -iface says. So every job
also runs with librmax-bindaddr.so preloaded (native/launch/bindaddr.c), which
turns a wildcard bind into a bind to this host's address on the job's network."""

from __future__ import annotations

import ipaddress
import json
import os
import re
import socket
import subprocess
from dataclasses import dataclass
from functools import lru_cache

from rmax.errors import RmaxError
from rmax.native import library

LOOPBACK = "127.0.0.0/8"
_IFACE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,14}$")   # Linux: at most 15 bytes (IFNAMSIZ - 1)


@dataclass(frozen=True)
class JobNetwork:
    cidr: str                      # the subnet MPI uses (Open MPI's *_if_include)
    iface: str                     # its interface on the launching host (Hydra's -iface)
    extra: tuple[str, ...] = ()    # hosts outside that subnet (a routed network), each as ADDR/32
    remote: bool = False           # some host is not this one: daemons start elsewhere

    @property
    def single_host(self) -> bool:
        return not self.remote

    def bind_env(self) -> dict[str, str]:
        """The variables that confine every process of the job to this network."""
        lib = library("librmax-bindaddr.so")
        preload = " ".join(filter(None, [lib, os.environ.get("LD_PRELOAD")]))
        return {"LD_PRELOAD": preload, "RMAX_BIND_NET": ",".join((self.cidr, *self.extra))}


def _ip_json(*args: str) -> list[dict]:
    try:
        p = subprocess.run(["ip", "-j", *args], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise RmaxError(f"cannot run `ip {' '.join(args)}`: {e}", hint="apt-get install iproute2") from None
    if p.returncode != 0:
        return []
    try:
        return json.loads(p.stdout or "[]")
    except json.JSONDecodeError:
        return []


def interface_network(iface: str) -> str:
    """The IPv4 subnet of an interface of this host, e.g. '10.1.0.0/24'."""
    if not _IFACE.match(iface):
        raise RmaxError(f"--net-if '{iface}' is not an interface name", hint="`ip -br addr` lists them")
    for link in _ip_json("-4", "addr", "show", "dev", iface):
        for a in link.get("addr_info", []):
            if a.get("family") == "inet" and "local" in a:
                return str(ipaddress.ip_interface(f"{a['local']}/{a['prefixlen']}").network)
    raise RmaxError(f"--net-if {iface}: no such interface with an IPv4 address on this host",
                    hint="`ip -br addr` lists the interfaces and their addresses")


@lru_cache(maxsize=64)
def _address(name: str) -> str | None:
    try:
        return socket.getaddrinfo(name, None, socket.AF_INET)[0][4][0]
    except (socket.gaierror, UnicodeError, IndexError):
        return None


def is_local(name: str) -> bool:
    """A host name that means this host: localhost, our own name, or an address of ours."""
    if name in ("localhost", socket.gethostname()):
        return True
    addr = _address(name)
    if addr is None:
        return False
    return ipaddress.ip_address(addr).is_loopback or addr in _own_addresses()


@lru_cache(maxsize=1)
def _own_addresses() -> frozenset[str]:
    return frozenset(a["local"] for link in _ip_json("-4", "addr", "show") for a in link.get("addr_info", [])
                     if "local" in a)


def job_network(host_names: list[str] | None, net_if: str | None = None) -> JobNetwork:
    """Loopback when every host is this one; else the subnet of `net_if`, or of the
    interface the route to the first other host leaves by."""
    remote = [h for h in (host_names or []) if not is_local(h)]
    if net_if:
        cidr, iface = interface_network(net_if), net_if
    elif not remote:
        return JobNetwork(LOOPBACK, "lo")
    else:
        unknown = next((h for h in remote if _address(h) is None), None)
        if unknown:
            raise RmaxError(f"unknown host '{unknown}': it does not resolve", hint="check the name, /etc/hosts or DNS")
        addr = _address(remote[0])
        route = _ip_json("route", "get", addr)
        if not route or "dev" not in route[0]:
            raise RmaxError(f"no route to {remote[0]} ({addr})", hint="give the interface with --net-if IFACE")
        iface = route[0]["dev"]
        cidr = interface_network(iface)
    net = ipaddress.ip_network(cidr)
    extra = []
    for h in remote:
        addr = _address(h)
        if addr and ipaddress.ip_address(addr) not in net:
            extra.append(f"{addr}/32")
    return JobNetwork(cidr, iface, tuple(dict.fromkeys(extra)), remote=bool(remote))
