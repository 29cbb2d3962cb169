"""`rmax experiment`: measure before and after a setting change, then restore it."""

from __future__ import annotations

import click

from rmax.cli.output import console, json_option, print_json
from rmax.params import HOSTFILE, HOSTS, TIMEOUT, Count
from rmax.errors import RmaxError, unfinished
from rmax.launch import REGISTRY
from rmax.nic.mtu_results import REPEATS


@click.group("experiment")
def command():
    """Measure under each value of a setting (e.g. MTU), restoring it afterwards."""


def _print_table(title: str, rows: list[dict], repeats: int) -> None:
    from rmax.terminal import Table

    from rmax.nic.mtu_results import table

    columns, cells, caption = table(rows, repeats)
    t = Table(title=title, caption=caption)
    for c in columns:
        t.add_column(c)
    for row in cells:
        t.add_row(*row)
    console.print(t)
    for r in rows:
        if r.get("error"):
            console.print(f"MTU {r['mtu']}: {r['error']}")
    console.print("runs: " + "; ".join(f"MTU {r['mtu']}: {', '.join(x[:8] for x in r['runs'])}" for r in rows))


@command.command("mtu")
@click.argument("mtus")
@click.option("--vcluster", "vcluster_name", default=None, metavar="NAME",
              help="Virtual cluster to change (default: the only one up).")
@click.option("--interface", "interfaces", multiple=True, metavar="IFACE",
              help="Real interface to change on every host of --hosts/--hostfile instead (needs --yes).")
@click.option("--hosts", type=HOSTS, default=None,
              help="With --interface: the hosts (2 or more); latency and bandwidth between the first two.")
@click.option("--hostfile", type=HOSTFILE, default=None,
              help="With --interface: the hosts of a hostfile instead of --hosts.")
@click.option("--launcher", type=click.Choice(sorted(REGISTRY)), default=None,
              help="With --interface: how to reach the hosts (default: srun inside Slurm, else mpirun).")
@click.option("--yes", is_flag=True, help="Really change the MTU of real interfaces.")
@click.option("--hpl-n", type=Count(0, 1 << 20), default=1200, show_default=True, help="Problem size of the short HPL (0: none).")
@click.option("--bytes", "size", type=Count(1, 1 << 30), default=4_000_000, show_default=True, help="Bytes per bandwidth transfer.")
@click.option("--timeout", type=TIMEOUT, default=300.0, show_default=True,
              help="Seconds per HPL run (and, with --interface, per latency/bandwidth run).")
@click.option("--repeats", type=Count(1, 100), default=REPEATS, show_default=True,
              help="Measurements per MTU, the MTUs taking turns; medians, their ranges and Welch's t-test use them.")
@json_option
def mtu_cmd(mtus, vcluster_name, interfaces, hosts, hostfile, launcher, yes, hpl_n, size, timeout, repeats, as_json):
    """Latency, bandwidth and a short HPL under each MTU; the MTUs are restored afterwards.

    Exit status 3: the experiment is partial (a repeat measured nothing; the error names it).

    Example: rmax experiment mtu 1500,9000
    (real NICs: rmax experiment mtu 1500,9000 --interface eth1 --hostfile nodes --yes)"""
    from rmax.nic import mtu_experiment
    from rmax.nic.mtu import parse_mtus
    from rmax.nic.mtu_links import HostLinks, VclusterLinks

    values = parse_mtus(mtus)
    if interfaces:
        if not yes:
            raise RmaxError(f"changing the MTU of real interfaces ({', '.join(interfaces)}) needs --yes",
                            hint="other traffic on them is disturbed while the experiment runs")
        if vcluster_name:
            raise RmaxError("give --vcluster or --interface, not both")
        from rmax.launch import parse_hosts, read_hostfile

        host_list = parse_hosts(hosts) if hosts else read_hostfile(hostfile) if hostfile else []
        links = HostLinks.of(interfaces, host_list, hostfile, launcher, size, timeout)
    else:
        if hosts or hostfile or launcher:
            raise RmaxError("--hosts, --hostfile and --launcher go with --interface",
                            hint="on a virtual cluster every link changes; pick the cluster with --vcluster")
        links = VclusterLinks.of(vcluster_name, size)
    rec = mtu_experiment.run(links, values, hpl_n, timeout, repeats)
    if as_json:
        print_json(rec.as_dict())   # the stored run, as every command's --json shows it
    else:
        _print_table(f"MTU experiment on {links.where} (run {rec.id[:8]}; MTUs restored)", rec.summary["results"],
                     repeats)
    if rec.status != "ok":
        raise unfinished("experiment", rec)
