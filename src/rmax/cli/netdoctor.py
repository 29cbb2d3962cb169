"""`rmax net`: NIC settings on every node, and the doctor that flags the costly ones."""

from __future__ import annotations

import json
import subprocess
import sys

import click
from rich.text import Text

from rmax.cli.output import console, json_option, print_json
from rmax.params import HOSTFILE, HOSTS, TIMEOUT
from rmax.errors import RmaxError


@click.group("net")
def command():
    """NIC settings on every node (MTU, speed, driver, coalescing, offloads) and what they cost."""


def _from_vcluster(name: str | None) -> list[dict]:
    from rmax.vcluster import find

    st = find(name, "--vcluster NAME")
    nodes = []
    for n in st.plan.nodes:
        p = subprocess.run([*st.enter(n.name), sys.executable, "-m", "rmax.nic.settings"], capture_output=True,
                           text=True, timeout=60)
        if p.returncode != 0:
            raise RmaxError(f"reading the NICs of {n.name} failed: " + (p.stderr.strip().splitlines() or ["?"])[-1])
        rep = json.loads(p.stdout)
        rep["host"] = n.name
        nodes.append(rep)
    return nodes


def _from_hosts(hosts: str | None, hostfile: str | None, launcher: str | None, timeout: float) -> list[dict]:
    """One rank per node through the launcher, each printing its node's report."""
    from rmax.launch import parse_hosts, prepare, read_hostfile, run_job
    from rmax.launch.base import LaunchSpec

    host_list = parse_hosts(hosts) if hosts else read_hostfile(hostfile)
    spec = LaunchSpec([sys.executable, "-m", "rmax.nic.settings"], np=len(host_list), hosts=host_list,
                      hostfile=hostfile, ranks_per_node=1, bind="none")
    job = run_job(prepare(spec, launcher), timeout)
    if not job.ok:
        raise job.failure("collecting NIC settings")
    reports = [json.loads(l) for l in job.stdout.splitlines() if l.startswith('{"schema": "rmax.nic/1"')]
    return sorted(reports, key=lambda r: r["host"])


def _evidence(store) -> dict:
    """This cluster's own measurements that back the rules, when stored."""
    out = {}
    exp = store.list(kind="experiment-mtu", status="ok", limit=1)
    if exp:
        rows = exp[0].summary.get("results", [])
        text = "; ".join(f"MTU {r['mtu']}: traffic failed" if r.get("error") else
                         f"MTU {r['mtu']}: {r.get('bandwidth_MBps') or 0:.1f} MB/s, {r.get('latency_us') or 0:.1f} us"
                         + (f", HPL {r['hpl_gflops']:.2f} GFLOPS" if r.get("hpl_gflops") else "") for r in rows)
        reps = exp[0].summary.get("repeats", 1)
        out["mtu"] = f"measured here (experiment-mtu run {exp[0].id[:8]}, medians of {reps} repeat(s)): {text}"
    mat = store.list(kind="tcp-matrix", status="ok", limit=1)
    if mat:
        lat = [v for row in mat[0].summary.get("latency_s", []) for v in row if v]
        if lat:
            out["latency"] = (f"measured here (tcp-matrix run {mat[0].id[:8]}): TCP latency "
                              f"{min(lat) * 1e6:.1f}-{max(lat) * 1e6:.1f} us between nodes")
    return out


@command.command("doctor")
@click.option("--vcluster", "vcluster_name", default=None, is_flag=False, flag_value="", metavar="[NAME]",
              help="Check the nodes of a virtual cluster.")
@click.option("--hosts", type=HOSTS, default=None, help="Check these hosts (one rank per node).")
@click.option("--hostfile", type=HOSTFILE, default=None, help="Check the hosts of a hostfile.")
@click.option("--launcher", default=None, help="Launcher for --hosts/--hostfile.")
@click.option("--timeout", type=TIMEOUT, default=120.0, show_default=True)
@json_option
def doctor_cmd(vcluster_name, hosts, hostfile, launcher, timeout, as_json):
    """Flag NIC settings published cluster studies found costly: interrupt throttling, mismatched MTUs, ...

    Default: this node. Example: rmax net doctor --hostfile nodes"""
    from rmax.nic.doctor import diagnose
    from rmax.nic.settings import collect, effective_speed
    from rmax.store import open_store

    if hosts and hostfile:
        raise RmaxError("give --hosts or --hostfile, not both")
    if vcluster_name is not None:
        nodes = _from_vcluster(vcluster_name or None)
    elif hosts or hostfile:
        nodes = _from_hosts(hosts, hostfile, launcher, timeout)
    else:
        nodes = [collect()]
    with open_store() as store:
        findings = diagnose(nodes, _evidence(store))
        with store.start_run("net-doctor", params={"nodes": [n["host"] for n in nodes]},
                             hosts=[n["host"] for n in nodes]) as run:
            run.update(summary={"findings": [f.to_dict() for f in findings], "nodes": nodes})
        rec = store.get(run.id)
    if as_json:
        print_json(rec.as_dict())
        return
    from rmax.terminal import Table

    t = Table(title=f"NICs of {len(nodes)} node(s) (run {rec.id[:8]})")
    for col in ("Node", "Interface", "MTU", "Speed (Mb/s)", "Driver", "rx-usecs", "Adaptive RX", "Networks"):
        t.add_column(col)
    for n in nodes:
        for i in n["interfaces"]:
            c = i.get("coalesce") or {}
            speed = str(effective_speed(i) or "—")
            if i.get("shaped_mbps") and i.get("speed_mbps") and i["shaped_mbps"] < i["speed_mbps"]:
                speed += f" (shaped; link {i['speed_mbps']})"
            t.add_row(n["host"], i["name"], str(i.get("mtu")), speed, i.get("driver") or "—",
                      str(c.get("rx-usecs", "—")), {True: "on", False: "off"}.get(c.get("adaptive_rx"), "—"),
                      ", ".join(i.get("networks", [])))
    console.print(t)
    if not findings:
        console.print("no findings: nothing published cluster studies found costly")
    for f in findings:
        colour = "yellow" if f.severity == "warn" else "cyan"
        console.print(Text.assemble((f.severity, colour), f" {f.rule} at {f.where}: {f.message}"))
        for e in f.evidence:
            console.print(f"    because {e}")
        if f.fix:
            console.print(f"    fix: {f.fix}")
