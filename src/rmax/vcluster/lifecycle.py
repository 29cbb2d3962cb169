"""`up`, `down` and `status` of a virtual cluster.

A node is a network namespace (its network) plus a persistent UTS namespace
(its host name); a switch is a Linux bridge; a node's link and every trunk
between switches is a veth pair, shaped with tbf; a star's trunks meet at a
spine bridge with no node of its own. A mesh of bridges would be
an Ethernet loop, so in a mesh every trunk port is "isolated": a frame that
arrives from one trunk never leaves on another, which gives each pair of
switches its direct path and no broadcast storm, without STP's delays."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

from rmax.errors import RmaxError
from rmax.textfile import write_atomic
from rmax.vcluster import cgroups, daemons
from rmax.vcluster import slurm as slurm_mod
from rmax.vcluster import state as st_mod
from rmax.vcluster import system as sx
from rmax.vcluster.addresses import choose_subnet
from rmax.vcluster.plan import Plan, allot_cpus, check_counts, make_plan, parse_rate
from rmax.vcluster.state import State

# Test hook: exit abruptly after creating this many objects, as a crashed or
# killed `up` would (no rollback), so tests can prove `down` cleans up after it.
CRASH_VARIABLE = "RMAX_VCLUSTER_CRASH_AFTER"


def up(name: str, nodes: int, switches: int, *, link: str | None = None, trunk: str | None = None,
       trunk_kind: str = "chain", mtu: int = 1500, subnet: str | None = None, slots: int = 1,
       slurm: bool = False, pin_cpus: bool = False, sizes: list[int] | None = None,
       cpu_quota: dict[str, float] | None = None) -> State:
    """pin_cpus: each node gets its own `slots` CPUs, from those this process may use, in cgroups of its own.
    sizes: nodes per switch; None: as even as the counts allow. cpu_quota: node name -> the fraction of
    one CPU its processes may use together (a CFS quota on its cgroup, cgroups.set_quota)."""
    check_counts(nodes, switches, trunk_kind, mtu, slots, sizes)
    cpu_quota = check_quotas(name, nodes, cpu_quota or {})
    cpus = sorted(os.sched_getaffinity(0)) if pin_cpus else None
    if cpus is not None:
        allot_cpus(nodes, slots, cpus)   # too few CPUs is bad input: refused before root is checked
    link_rate = parse_rate(link, "--link") if link else None
    trunk_rate = parse_rate(trunk, "--trunk") if trunk else None
    sx.require_root("rmax vcluster up")
    sx.require_tools("ip", "tc", "bridge", "unshare", "nsenter")
    if slurm:
        slurm_mod.require_tools()
    hierarchies = cgroups.find_hierarchies() if pin_cpus else []   # refused here, before anything exists
    quota_h = cgroups.find_cpu_hierarchy() if cpu_quota else None
    others = [s.plan.subnet for s in st_mod.load_all() if s.plan and s.name != name]
    net = choose_subnet(nodes, subnet, others)
    plan = make_plan(name, nodes, switches, net, trunk_kind=trunk_kind, link_rate=link_rate,
                     trunk_rate=trunk_rate, mtu=mtu, slots=slots, cpus=cpus, sizes=sizes)
    plan.extra["slurm"] = slurm
    if hierarchies:
        plan.extra["cgroups"] = [h.as_dict() for h in hierarchies]
    if cpu_quota:
        plan.extra["cpu_quota"] = dict(cpu_quota)
        plan.extra["quota_cgroups"] = quota_h.as_dict()
    state = st_mod.create(name)
    state.plan = plan
    state.save()
    try:
        _build(state)
    except BaseException:
        down(state)   # an error or Ctrl-C half-way: leave nothing behind
        raise
    return state


class _Builder:
    def __init__(self, state: State):
        self.state = state
        self.crash_after = int(os.environ.get(CRASH_VARIABLE, "0") or 0)

    def record(self, kind: str, name: str, **extra) -> None:
        if self.crash_after and len(self.state.objects) >= self.crash_after:
            os._exit(70)
        self.state.record(kind, name, **extra)


def _build(state: State) -> None:
    plan, b = state.plan, _Builder(state)
    m = str(plan.mtu)
    if plan.pinned:
        for h in map(cgroups.Hierarchy.from_dict, plan.extra["cgroups"]):
            for n in plan.nodes:
                d = cgroups.cgroup_dir(h, n.name)
                b.record("cgroup", str(d), node=n.name)
                cgroups.create(h, d, n.cpus)
    for node, fraction in plan.extra.get("cpu_quota", {}).items():
        # the node's cgroup in the cpu hierarchy: a pinned node's own, else one holding the quota alone
        h = cgroups.Hierarchy.from_dict(plan.extra["quota_cgroups"])
        d = cgroups.cgroup_dir(h, node)
        if d not in state.cgroups(node):
            b.record("cgroup", str(d), node=node)
            cgroups.create(h, d, [], weight=False)
        cgroups.set_quota(d, fraction)
    for br in plan.switches:
        b.record("link", br)
        sx.run(["ip", "link", "add", br, "mtu", m, "type", "bridge"], f"creating bridge {br}")
        sx.run(["ip", "link", "set", br, "up"], f"starting bridge {br}")
    for n in plan.nodes:
        b.record("netns", n.name)
        sx.run(["ip", "netns", "add", n.name], f"creating namespace {n.name}")
        sx.run(["ip", "-n", n.name, "link", "set", "lo", "up"], f"starting lo in {n.name}")
        uts = state.uts_file(n.name)
        b.record("uts", str(uts))
        sx.make_uts(uts, n.name)
        b.record("link", n.veth)
        sx.run(["ip", "link", "add", n.veth, "mtu", m, "type", "veth", "peer", "name", "eth0", "mtu", m,
                "address", n.mac, "netns", n.name], f"creating the link of {n.name}")
        sx.run(["ip", "link", "set", n.veth, "master", plan.switches[n.switch], "up"], f"attaching {n.name}")
        sx.run(["ip", "-n", n.name, "addr", "add", f"{n.address}/{plan.prefixlen}", "dev", "eth0"],
               f"addressing {n.name}")
        sx.run(["ip", "-n", n.name, "link", "set", "eth0", "up"], f"starting eth0 in {n.name}")
        if plan.link_rate:
            sx.tbf(n.veth, plan.link_rate, plan.mtu)                 # switch -> node
            sx.tbf("eth0", plan.link_rate, plan.mtu, ns=n.name)      # node -> switch
    for n in plan.nodes:
        sx.static_neighbours(n.name, [(o.address, o.mac) for o in plan.nodes if o is not n])
    for t in plan.trunks:
        b.record("link", t.end_a)
        sx.run(["ip", "link", "add", t.end_a, "mtu", m, "type", "veth", "peer", "name", t.end_b, "mtu", m],
               f"creating trunk {t.end_a}")
        for end, sw in ((t.end_a, t.a), (t.end_b, t.b)):
            sx.run(["ip", "link", "set", end, "master", plan.switches[sw]], f"attaching trunk {end}")
            if plan.trunk_kind == "mesh":
                sx.run(["bridge", "link", "set", "dev", end, "isolated", "on"], f"isolating trunk port {end}")
            sx.run(["ip", "link", "set", end, "up"], f"starting trunk {end}")
            if plan.trunk_rate:
                sx.tbf(end, plan.trunk_rate, plan.mtu)
    b.record("hosts", plan.name)
    sx.hosts_add(plan.name, [(n.address, n.name) for n in plan.nodes])
    write_files(state)
    if slurm_mod.enabled(state):
        slurm_mod.write_files(state)
        slurm_mod.start(state, b.record)
    state.complete = True
    state.save()


def check_quotas(name: str, nodes: int, quotas: dict[str, float]) -> dict[str, float]:
    """--cpu-quota: each named node one of the cluster's (NAME-n1 ..., or n1 ... for short), its
    fraction of one CPU at least 0.001 (a quota of 1 ms a second, the kernel's least) and at most the
    CPUs this process may use. Returns them by full node name."""
    names = [f"{name}-n{i + 1}" for i in range(nodes)]
    cpus = len(os.sched_getaffinity(0))
    out: dict[str, float] = {}
    for given, fraction in quotas.items():
        node = f"{name}-{given}" if f"{name}-{given}" in names else given
        if node in out:
            raise RmaxError(f"--cpu-quota names {node} twice")
        out[node] = fraction
        if node not in names:
            raise RmaxError(f"--cpu-quota {node}: virtual cluster '{name}' has no node '{node}'",
                            hint=f"nodes: {names[0]} ... {names[-1]}" if len(names) > 1 else f"node: {names[0]}")
        if not 0.001 <= fraction <= cpus:
            raise RmaxError(f"--cpu-quota {node}={fraction:g}: the fraction of one CPU must be 0.001 to {cpus} "
                            f"(the CPUs this process may use)")
    return out


def write_files(state: State) -> None:
    """The hostfile, the launcher agent and the declared topology (cluster.toml)."""
    plan = state.plan
    write_atomic(state.hostfile, f"# virtual cluster {plan.name}: {len(plan.nodes)} nodes on {len(plan.leaves)} "
                 f"switches, subnet {plan.subnet}\n"
                 + "".join(f"{n.name} slots={plan.slots}\n" for n in plan.nodes), "the hostfile")
    cases = "".join(f"  {shlex.quote(n.name)}|{n.address}) node={shlex.quote(n.name)}; "
                    f"procs={shlex.quote(_procs(state, n.name))} ;;\n" for n in plan.nodes)
    # Open MPI calls its remote-shell agent as it would call ssh: `agent [options] HOST COMMAND...`,
    # COMMAND being a shell command line Open MPI built itself. ssh would run it through the
    # remote user's shell; the agent does the same inside HOST's namespaces.
    write_atomic(state.agent, f"""#!/bin/sh
# Launcher agent of rmax virtual cluster {plan.name} (written by `rmax vcluster up`).
while [ $# -gt 0 ]; do case "$1" in -*) shift ;; *) break ;; esac; done
[ $# -ge 2 ] || {{ echo "usage: $0 HOST COMMAND..." >&2; exit 255; }}
host=$1; shift
case "$host" in
{cases}  *) echo "$0: $host is not a node of virtual cluster {plan.name}" >&2; exit 255 ;;
esac
# a pinned node: the command joins the node's cgroups first, and all it starts stays on the node's CPUs
for p in $procs; do echo $$ >"$p" || exit 255; done
exec nsenter --net=/run/netns/"$node" --uts={shlex.quote(str(state.directory / 'uts'))}/"$node" -- /bin/sh -c "$*"
""", "the launcher agent", mode=0o755)
    from rmax.topology.declared import write_cluster_toml

    write_cluster_toml(state.cluster_toml, plan.groups(), plan.leaves, note=f"virtual cluster {plan.name}, declared by "
                       f"`rmax vcluster up`; link {_rate(plan.link_rate)}, trunk {_rate(plan.trunk_rate)} "
                       f"({plan.trunk_kind}{', through spine ' + plan.spine if plan.spine else ''})")


def _procs(state: State, node: str) -> str:
    """The node's cgroup.procs files, space-separated (cgroup mount points and node names have no spaces)."""
    return " ".join(str(cgroups.procs_file(d)) for d in state.cgroups(node))


def _quota_held(state: State, node: str) -> list[int] | None:
    """[quota, period] in us of the node's CPU quota as the kernel holds it now; None: no quota."""
    for d in state.cgroups(node):
        held = cgroups.read_quota(d)
        if held:
            return list(held)
    return None


def _rate(bits):
    from rmax.vcluster.plan import format_rate

    return format_rate(bits)


def down(state: State) -> list[str]:
    """Remove every recorded object (newest first), then the state folder; returns what was removed."""
    removed = []
    for obj in reversed(state.objects):
        kind, name = obj["kind"], obj["name"]
        if kind == "daemon":
            if daemons.stop(obj.get("pid"), str(state.directory)):
                removed.append(f"daemon {name}")
        elif kind == "hosts":
            sx.hosts_remove(name)
        elif kind == "link":
            if sx.link_exists(name):
                sx.delete_link(name)
                removed.append(f"link {name}")
        elif kind == "netns":
            sx.kill_netns_processes(name)   # job steps and ranks a daemon left behind
            if sx.netns_exists(name):
                sx.delete_netns(name)
                removed.append(f"namespace {name}")
        elif kind == "uts":
            sx.delete_uts(Path(name))
        elif kind == "cgroup":
            if cgroups.remove(Path(name)):
                removed.append(f"cgroup {name}")
    st_mod.forget(state)
    return removed


def down_by_name(name: str | None, all_clusters: bool = False) -> dict[str, list[str]]:
    sx.require_root("rmax vcluster down")
    if all_clusters:
        states = st_mod.load_all()
    elif name:
        s = st_mod.load(name)
        states = [s] if s else []
    else:
        states = st_mod.load_all()
        if len(states) > 1:
            from rmax.errors import RmaxError

            raise RmaxError("several virtual clusters are up: " + ", ".join(s.name for s in states),
                            hint="name one with --name, or use --all")
    return {s.name: down(s) for s in states}


def status(state: State) -> dict:
    """What the state file says, checked against what exists now."""
    plan: Plan | None = state.plan
    missing = []
    for obj in state.objects:
        kind, name = obj["kind"], obj["name"]
        present = (sx.link_exists(name) if kind == "link" else sx.netns_exists(name) if kind == "netns"
                   else Path(name).exists() if kind in ("uts", "cgroup")
                   else daemons.alive(obj.get("pid"), str(state.directory)) if kind == "daemon" else True)
        if not present:
            missing.append(f"{kind} {name}")
    info = {"name": state.name, "complete": state.complete, "healthy": state.complete and not missing,
            "missing": missing, "directory": str(state.directory), "hostfile": str(state.hostfile),
            "agent": str(state.agent), "cluster_toml": str(state.cluster_toml)}
    if plan:
        info.update(subnet=plan.subnet, mtu=plan.mtu, slots=plan.slots, trunk_kind=plan.trunk_kind,
                    link_rate_bps=plan.link_rate, trunk_rate_bps=plan.trunk_rate,
                    switches=[{"name": br, "nodes": g} for br, g in zip(plan.leaves, plan.groups())], spine=plan.spine,
                    nodes=[{"name": n.name, "address": n.address, "switch": plan.switches[n.switch], "cpus": n.cpus,
                            "cgroups": [str(d) for d in state.cgroups(n.name)],
                            "cpu_quota": plan.extra.get("cpu_quota", {}).get(n.name),
                            "cpu_quota_us": _quota_held(state, n.name)} for n in plan.nodes])
        if plan.pinned:
            info["cgroups"] = plan.extra.get("cgroups")
        if slurm_mod.enabled(state):
            states = slurm_mod.node_states(state) if state.complete else {}
            for n in info["nodes"]:
                n["slurm"] = states.get(n["name"], "unreachable")
            info["slurm"] = {"conf": str(slurm_mod.conf_path(state)), "partition": plan.name,
                             "daemons": slurm_mod.daemon_status(state)}
    return info
