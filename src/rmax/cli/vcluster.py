"""`rmax vcluster`: a virtual cluster of network namespaces on this machine."""

from __future__ import annotations

import os

import click
from rich.text import Text

from rmax.cli.output import console, fmt, json_option, print_json
from rmax.params import Count

name_option = click.option("--name", default=None, metavar="NAME",
                           help="Cluster name (default: rmax for up; the only cluster for the others).")


@click.group("vcluster")
def command():
    """A virtual cluster of network namespaces: nodes, switches, shaped links.

    Example: rmax vcluster up --nodes 4 --switches 2 --link 1gbit --trunk 100mbit"""


@command.command("up")
@click.option("--nodes", type=Count(1, 1000), required=True, help="Number of nodes (network namespaces).")
@click.option("--switches", type=Count(1, 1000), default=None, help="Number of switches (bridges)  [default: 1, or as many as --switch-sizes gives].")
@click.option("--switch-sizes", "switch_sizes", default=None, metavar="N,N,...",
              help="Nodes on each switch, in order, e.g. 4,3,3 (default: as even as --nodes and --switches allow).")
@click.option("--link", default=None, metavar="RATE", help="Node link rate, e.g. 1gbit (default: unshaped).")
@click.option("--trunk", default=None, metavar="RATE", help="Trunk rate between switches, e.g. 100mbit.")
@click.option("--trunks", "trunk_kind", type=click.Choice(["chain", "mesh", "star"]), default="chain", show_default=True,
              help="How switches are joined: in a row, each to each, or each to one spine switch (a two-level tree).")
@click.option("--mtu", type=Count(68, 65535), default=1500, show_default=True, help="MTU of every link.")
@click.option("--slots", type=Count(1, 1 << 16), default=1, show_default=True, help="MPI slots per node in the hostfile.")
@click.option("--subnet", default=None, metavar="CIDR", help="Private IPv4 subnet (default: a free one).")
@click.option("--name", default="rmax", show_default=True, help="Cluster name (1-6 letters/digits).")
@click.option("--slurm", is_flag=True, help="Also run Slurm: munge, a slurmctld and one slurmd per node.")
@click.option("--pin-cpus", is_flag=True,
              help="Give each node its own --slots CPUs (a cpuset cgroup per node, weighted far above other "
                   "processes where the cpu controller is at hand), as real nodes have their own cores; without it "
                   "the nodes share every CPU.")
@click.option("--cpu-quota", "cpu_quota", multiple=True, metavar="NODE=FRACTION",
              help="Slow NODE on purpose: every process of it (pinned or not) shares FRACTION of one CPU, a cgroup "
                   "CPU quota enforced every 10 ms, e.g. --cpu-quota rmax-n3=0.4 or n3=0.4 (repeatable).")
@json_option
def up_cmd(nodes, switches, switch_sizes, link, trunk, trunk_kind, mtu, slots, subnet, name, slurm, pin_cpus, cpu_quota,
           as_json):
    """Create the namespaces, bridges, links and trunks; write a hostfile and a launcher agent."""
    from rmax.vcluster import status, up
    from rmax.vcluster.plan import parse_sizes

    sizes = parse_sizes(switch_sizes) if switch_sizes is not None else None
    if switches is None:
        switches = len(sizes) if sizes else 1
    state = up(name, nodes, switches, link=link, trunk=trunk, trunk_kind=trunk_kind, mtu=mtu, subnet=subnet,
               slots=slots, slurm=slurm, pin_cpus=pin_cpus, sizes=sizes, cpu_quota=parse_quotas(cpu_quota))
    info = status(state)
    if as_json:
        print_json(info)
        return
    _print_status(info)
    console.print(f"launch through it: rmax launch check --launcher vcluster --vcluster {name} --np {nodes * slots}")
    if slurm:
        console.print(f"use its Slurm:     eval \"$(rmax vcluster env --name {name})\"; sinfo")


def parse_quotas(given: tuple[str, ...]) -> dict[str, float]:
    """NODE=FRACTION, each node once -> {node: fraction}; anything else one error line."""
    import math

    from rmax.errors import RmaxError

    out: dict[str, float] = {}
    for item in given:
        node, sep, value = item.partition("=")
        try:
            fraction = float(value) if sep and node else math.nan
        except ValueError:
            fraction = math.nan
        if not math.isfinite(fraction):
            raise RmaxError(f"--cpu-quota '{item[:60]}' is not NODE=FRACTION", hint="e.g. --cpu-quota rmax-n3=0.4")
        if node in out:
            raise RmaxError(f"--cpu-quota names {node[:40]} twice")
        out[node] = fraction
    return out


def _print_status(info: dict) -> None:
    from rmax.vcluster.plan import format_rate

    state = "up" if info["healthy"] else ("incomplete" if not info["complete"] else "damaged")
    console.print(Text.assemble("virtual cluster ", (info["name"], "bold"),
                                f": {state}, subnet {info.get('subnet', '?')}, MTU {info.get('mtu', '?')}, "
                                f"link {format_rate(info.get('link_rate_bps'))}, "
                                f"trunk {format_rate(info.get('trunk_rate_bps'))} ({info.get('trunk_kind', '?')})"))
    for sw in info.get("switches", []):
        console.print(f"  {sw['name']}: " + ", ".join(sw["nodes"]))
    if info.get("spine"):
        console.print(f"  {info['spine']}: spine joining " + ", ".join(sw["name"] for sw in info["switches"]))
    if info.get("cgroups"):
        used = sorted({c for h in info["cgroups"] for c in h["controllers"]})
        console.print("  cpus     " + ", ".join(f"{n['name']} {','.join(map(str, n['cpus']))}" for n in info["nodes"])
                      + f" (own CPUs: cgroups with {' and '.join(used)}, v{info['cgroups'][0]['version']})"
                      + ("" if "cpu" in used else "; no cpu controller: other processes may still use them"))
    quotas = [n for n in info.get("nodes", []) if n.get("cpu_quota")]
    if quotas:
        console.print("  quota    " + ", ".join(
            f"{n['name']} {n['cpu_quota']:g} CPU" + (f" ({n['cpu_quota_us'][0]} us every {n['cpu_quota_us'][1]} us)"
                                                     if n.get("cpu_quota_us") else " (not held: cgroup missing)")
            for n in quotas))
    console.print(f"  hostfile {info['hostfile']}\n  agent    {info['agent']}\n  topology {info['cluster_toml']}")
    if "slurm" in info:
        nodes = ", ".join(f"{n['name']} {n['slurm']}" for n in info["nodes"])
        console.print(f"  slurm    {info['slurm']['conf']} (partition {info['slurm']['partition']}): {nodes}")
        console.print("  daemons  " + ", ".join(f"{d['name']} pid {d['pid']}" + ("" if d["running"] else " (stopped)")
                                                for d in info["slurm"]["daemons"]))
    if info["missing"]:
        console.print("  missing: " + ", ".join(info["missing"]) + " (rmax vcluster down cleans up)")


@command.command("status")
@name_option
@json_option
def status_cmd(name, as_json):
    """Show the clusters that are up, checked against what exists."""
    from rmax.vcluster import load, load_all, status

    states = [load(name)] if name else load_all()
    states = [s for s in states if s is not None]
    infos = [status(s) for s in states]
    if as_json:
        print_json(infos)
        return
    if not infos:
        console.print("no virtual cluster is up" + (f" named {name}" if name else ""))
    for i in infos:
        _print_status(i)


@command.command("down")
@name_option
@click.option("--all", "all_clusters", is_flag=True, help="Take down every virtual cluster.")
@json_option
def down_cmd(name, all_clusters, as_json):
    """Remove exactly what `up` created; safe to repeat, and after an `up` that crashed."""
    from rmax.vcluster import down_by_name

    done = down_by_name(name, all_clusters)
    if as_json:
        print_json({"down": [{"name": c, "removed": len(r)} for c, r in done.items()]})
        return
    if not done:
        console.print("nothing to take down" + (f": no virtual cluster {name}" if name else ""))
    for cname, removed in done.items():
        console.print(f"virtual cluster {cname} is down ({len(removed)} namespaces, links and daemons removed)")


@command.command("env")
@name_option
@json_option
def env_cmd(name, as_json):
    """Print the shell lines that point sbatch, srun, sinfo and squeue at the cluster's Slurm.

    Example: eval "$(rmax vcluster env)"; sbatch job.sbatch"""
    import shlex

    from rmax.vcluster import find
    from rmax.vcluster import slurm

    state = find(name)
    if as_json:     # the values themselves; PATH is to be prefixed with `path`
        on = slurm.enabled(state)
        print_json({"RMAX_VCLUSTER": state.name, "SLURM_CONF": str(slurm.conf_path(state)) if on else None,
                    "path": str(slurm.bin_dir(state)) if on else None})
        return
    lines = [f"export RMAX_VCLUSTER={shlex.quote(state.name)}"]
    if slurm.enabled(state):
        lines += slurm.env_lines(state)
    else:
        lines.append(f"# virtual cluster {state.name} runs no Slurm (rmax vcluster up --slurm starts it)")
    click.echo("\n".join(lines))


@command.command("exec", context_settings={"ignore_unknown_options": True})
@click.argument("node")
@click.argument("argv", nargs=-1, required=True, type=click.UNPROCESSED)
@name_option
def exec_cmd(node, argv, name):
    """Run a command on one node: rmax vcluster exec rmax-n1 -- ip addr"""
    from rmax.vcluster import find

    state = find(name)
    state.plan.node(node)
    enter = state.enter(node)
    os.execvp(enter[0], [*enter, *argv])


@command.command("probe")
@name_option
@click.option("--bytes", "size", type=Count(1, 1 << 30), default=4_000_000, show_default=True, help="Bytes per bandwidth transfer.")
@click.option("--pings", type=Count(1, 100000), default=200, show_default=True, help="Round trips per latency measurement.")
@json_option
def probe_cmd(name, size, pings, as_json):
    """Measure TCP latency and bandwidth between every pair of nodes and store it (kind tcp-matrix)."""
    from rmax.store import open_store
    from rmax.vcluster import find
    from rmax.vcluster.probe import measure_matrix

    state = find(name)
    with open_store() as store:
        with store.start_run("tcp-matrix", params={"cluster": state.name, "bytes": size, "pings": pings},
                             hosts=[n.name for n in state.plan.nodes]) as run:
            m = measure_matrix(state, size=size, pings=pings)
            samples = m.pop("samples")
            run.update(summary=m, samples=samples)
        rec = store.get(run.id)
    if as_json:
        print_json(rec.as_dict())
        return
    print_matrix(m, f"TCP between the nodes of {state.name} (run {rec.id[:8]})")


def print_matrix(m: dict, title: str) -> None:
    from rmax.terminal import Table

    t = Table(title=title)
    t.add_column("from \\ to")
    for h in m["hosts"]:
        t.add_column(h)
    for i, h in enumerate(m["hosts"]):
        t.add_row(h, *(("—" if i == j else f"{fmt(m['latency_s'][i][j] * 1e6 if m['latency_s'][i][j] else None, '.1f')} us"
                        f" / {fmt(m['bandwidth_Bps'][i][j] / 1e6 if m['bandwidth_Bps'][i][j] else None, '.1f')} MB/s")
                       for j in range(len(m["hosts"]))))
    console.print(t)
    if m.get("latency_statistic"):
        console.print(f"latency: {m['latency_statistic']}; bandwidth: {m.get('bandwidth_statistic')}", style="dim")
