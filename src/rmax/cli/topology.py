"""`rmax topology`: infer switch groups from measurements; place ranks by them."""

from __future__ import annotations

import click
from rich.text import Text

from rmax.cli.output import console, json_option, print_json
from rmax.params import HOSTFILE, HOSTS, TOPOLOGY, Number, OutputFile, Seconds, to_number
from rmax.errors import RmaxError, RunFailed
from rmax.hostlist import compress
from rmax.launch.base import MAX_RANKS
from rmax.textfile import write_atomic
from rmax.topology.inference_run import MEASURE_LEAST_S


@click.group("topology")
def command():
    """Infer switch groups from measured latency and bandwidth; place ranks by them."""


@command.command("infer")
@click.argument("run_id", required=False)
@click.option("--write", "write_path", type=OutputFile(), default=None,
              help="Also write the groups as a cluster.toml (refused while the switches are undecided).")
@click.option("--measure", is_flag=True,
              help="While undecided, measure what it names (every pair of the deciding hosts, one pair at a time, "
                   "through the launcher the matrix used) and infer again, until decided or --budget is spent.")
@click.option("--budget", type=Seconds(MEASURE_LEAST_S, 86400, lo_open=False), default=300.0, show_default=True,
              help="Seconds --measure may spend measuring.")
@click.option("--min-ratio", type=Number(1, 1e6, lo_open=True), default=1.2, show_default=True,
              help="Smallest far/near ratio, for the typical host, that counts as a switch boundary.")
@click.option("--min-significance", type=Number(0.5, 1e6), default=3.0, show_default=True,
              help="Standard errors a boundary's host margins need, on pairs its layout was not made from.")
@click.option("--min-level-significance", type=Number(0, 1e6), default=2.0, show_default=True,
              help="The same for a level above the switches, whose units are switch pairs.")
@click.option("--min-separation", type=Number(0.5, 1), default=1.0, show_default=True,
              help="A level above the switches: smallest share of (far, near) switch-pair couples in which "
                   "the far pair is the farther.")
@json_option
def infer_cmd(run_id, write_path, measure, budget, min_ratio, min_significance, min_level_significance,
              min_separation, as_json):
    """One of three answers from an all-pairs matrix run (default: the latest of `rmax bench matrix`
    and `rmax vcluster probe`): the switches and the levels above them; one switch; or undecided,
    naming the candidate layouts, the pairs that would decide and the command that measures them.
    Later runs of some of its hosts (that command's) join the tests as evidence; --measure runs
    that command itself until the answer is decided or its budget is spent.

    Example: rmax bench matrix --hostfile nodes && rmax topology infer --measure --write cluster.toml"""
    from rmax.store import open_store
    from rmax.topology.declared import write_cluster_toml
    from rmax.topology.inference_run import deciding_command, infer_from_store, measure_until_decided, store_inference

    limits = {"min_ratio": min_ratio, "min_significance": min_significance,
              "min_level_significance": min_level_significance, "min_separation": min_separation}
    with open_store() as store:
        source, later, hosts, result = infer_from_store(store, run_id, limits)
    rounds: list[dict] = []
    stopped = ""
    if measure and not result.decided:
        say = None if as_json else (lambda line: console.print(line, style="dim"))
        source, later, result, rounds, stopped = measure_until_decided(source, later, result, limits, budget, say)
    command = deciding_command(source, result.decide) if not result.decided else None
    if write_path and not result.switches_decided:
        raise RmaxError(f"no switch groups to write: the inference is {result.note}",
                        hint=f"measure the deciding pairs first: {command} (or add --measure)")
    with open_store() as store:
        rec = store_inference(store, source, later, hosts, result, limits, command=command,
                              measured={"rounds": rounds, "budget_s": budget, "stopped": stopped} if measure else None)
    if write_path:
        write_cluster_toml(write_path, result.groups, note=f"inferred by rmax topology infer (run {rec.id[:8]}) "
                           f"from {source.kind} run {source.id[:8]}: {result.note}")
    if as_json:
        print_json(rec.as_dict())
        _fail_if_a_round_failed(rounds)
        return
    more = f", with {len(later)} later run(s) of some of its hosts" if later else ""
    console.print(f"from {source.kind} run {source.id[:8]} ({len(hosts)} hosts{more}): "
                  f"{result.answer.upper()}: {result.note}")
    if result.answer == "layout":
        for i, g in enumerate(result.groups, 1):
            console.print(f"  switch {i}: " + ", ".join(g))
        # levels between the switches and the root: name each group by the switches under it
        under = [[i] for i in range(len(result.groups))]
        for k, parents in enumerate(result.parents[:-1]):
            under = [[s for g, p in enumerate(parents) if p == q for s in under[g]]
                     for q in range(len(result.levels[k + 1]))]
            console.print(f"  level {k + 2}: " + "; ".join("switches " + ", ".join(str(s + 1) for s in u)
                                                          for u in under))
        if result.inconsistent_pairs:
            console.print(Text.assemble("  ", ("far pairs inside a group", "yellow"), ": " +
                                        ", ".join(f"{a}-{b}" for a, b in result.inconsistent_pairs) + " (retest them)"))
    elif result.answer == "one switch":
        for b in result.boundaries:    # the strongest candidate of each metric, and what it lacked
            console.print(f"  {b.metric}: strongest candidate boundary {_num(b.ratio, '.2f')}x, "
                          f"{_num(b.t, '.1f')} standard errors over {b.hosts} host margins ({b.verdict})", style="dim")
    else:
        levels = any(c.above for c in result.candidates)
        for k, c in enumerate(result.candidates, 1):
            console.print(f"  candidate {k} ({c.metric}, {c.verdict}): {candidate_text(c, levels)}")
        console.print("  deciding pairs: " + ", ".join(f"{a}-{b}" for a, b in result.pairs[:SHOWN_PAIRS])
                      + (f" and {len(result.pairs) - SHOWN_PAIRS} more" if len(result.pairs) > SHOWN_PAIRS else ""))
        console.print(Text.assemble("  to decide, measure every pair of those hosts, then infer again: ",
                                    (command, "bold"), " && rmax topology infer"))
    if stopped:
        console.print(f"  --measure: {stopped}", style="yellow")
    console.print(f"stored as topology run {rec.id[:8]}" + (f"; written to {write_path}" if write_path else ""))
    _fail_if_a_round_failed(rounds)


def _fail_if_a_round_failed(rounds: list[dict]) -> None:
    """A deciding measurement that did not end ok is an error (exit 1), once the answer so far is stored."""
    if rounds and rounds[-1].get("failed"):
        raise RunFailed(f"the deciding measurement failed: {rounds[-1]['failed']}",
                        hint="the answer so far is stored; run the deciding command by hand to see its output")


def candidate_text(c, levels: bool = False) -> str:
    """A candidate layout in one line: its switches, then the levels above them (levels: say so
    where it has none, since another candidate has)."""
    what = "one switch" if len(c.groups) == 1 else "; ".join(compress(g) for g in c.groups)
    for part in c.above:
        what += f"; above them {len(part)} groups: " + " | ".join(compress(g) for g in part)
    if levels and len(c.groups) > 1 and not c.above:
        what += "; no level above them"
    return what


def _num(x, spec: str) -> str:
    return "-" if x is None or x != x else format(x, spec)


SHOWN_PAIRS = 24


def _grid(text: str) -> tuple[int, int]:
    try:
        p, q = (to_number(x, "--grid", 1, MAX_RANKS, integer=True) for x in text.lower().split("x"))
    except ValueError:
        raise RmaxError(f"--grid '{text}' is not PxQ", hint="e.g. --grid 2x4") from None
    return p, q


@command.command("place")
@click.option("--grid", default=None, metavar="PxQ", help="HPL process grid to place (rows inside switches).")
@click.option("--pmap", type=click.Choice(["row", "column"]), default="row", show_default=True,
              help="HPL process mapping (HPL.dat line 9).")
@click.option("--keep", type=click.Choice(["auto", "rows", "columns"]), default="auto", show_default=True,
              help="Grid lines to keep inside a switch; auto = the heavier by HPL's model (rows when Q > 3P).")
@click.option("--order", type=click.Choice(["block", "cyclic", "serpentine"]), default=None,
              help="Rank order for collectives instead of an HPL grid.")
@click.option("--topology", "topology_file", type=TOPOLOGY, default=None,
              help="cluster.toml with [[switch]] groups (default: the latest `topology infer`).")
@click.option("--hosts", type=HOSTS, default=None, help="Hosts and slots.")
@click.option("--hostfile", type=HOSTFILE, default=None, help="Hostfile.")
@click.option("--vcluster", "vcluster_name", default=None, is_flag=False, flag_value="", metavar="[NAME]",
              help="Use a virtual cluster's hosts and declared switches (NAME, else $RMAX_VCLUSTER or the only one up).")
@click.option("--rankfile", type=OutputFile(), default=None, help="Write an Open MPI rankfile here.")
@click.option("--force", is_flag=True, help="Place by an undecided inference's coarsest candidate layout.")
@json_option
def place_cmd(grid, pmap, keep, order, topology_file, hosts, hostfile, vcluster_name, rankfile, force, as_json):
    """Rank placement: an HPL grid with process rows inside switches, or a collective order.

    Example: rmax topology place --grid 2x2 --vcluster NAME --rankfile ranks.txt"""
    from rmax.launch import parse_hosts, read_hostfile
    from rmax.topology import placement as pl
    from rmax.topology.sources import groups_for

    if bool(grid) == bool(order):
        raise RmaxError("give either --grid PxQ or --order block|cyclic|serpentine")
    cpus = None
    if vcluster_name is not None:
        from rmax.launch import local_slots
        from rmax.vcluster import find

        st = find(vcluster_name or None, "--vcluster NAME")
        host_list = read_hostfile(st.hostfile)
        groups, source = groups_for(topology_file, "vcluster", vcluster=st.name)
        cpus = f"0-{local_slots() - 1}"   # virtual nodes share this machine's cores: do not pin
    else:
        if not (hosts or hostfile):
            raise RmaxError("which hosts? give --hosts, --hostfile or --vcluster")
        host_list = parse_hosts(hosts) if hosts else read_hostfile(hostfile)
        groups, source = groups_for(topology_file, None, force)
    if grid:
        p, q = _grid(grid)
        m = 0 if pmap == "row" else 1
        placed = pl.hpl_placement(groups, host_list, p, q, m, keep)
        natural = pl.natural_placement(groups, host_list, p, q, m)
        ranks, info = placed.ranks, {**placed.to_dict(), "natural_split_rows": natural.split_rows}
        note = f"{placed.note} (hostfile order: {natural.split_rows} of {p} rows span switches)"
    else:
        ranks = pl.collective_order(groups, host_list, order)
        info, note = {"ranks": [[s.host, s.index] for s in ranks]}, f"{order} order over {len(ranks)} slots"
    info["source"] = source
    if rankfile:
        write_atomic(rankfile, pl.rankfile_text(ranks, cpus), "the rankfile")
        info["rankfile"] = rankfile
    if as_json:
        print_json(info)
        return
    console.print(f"switch groups from {source}: {note}")
    for r, s in enumerate(ranks):
        console.print(f"  rank {r:<4} {s.host} slot {s.index}")
    if rankfile:
        console.print(f"rankfile written to {rankfile} (mpirun --rankfile {rankfile})")
