"""`rmax agent`: the per-node daemon (run), its view of the node (status), several nodes side by
side (fleet), its systemd unit (install), and the Grafana dashboard and Prometheus rules that
ship with it (dashboard, rules)."""

from __future__ import annotations

import shutil
import sys
from datetime import datetime
from pathlib import Path

import click
from rich.text import Text

from rmax.agent.units import shown
from rmax.cli.launch_options import vcluster_option
from rmax.cli.output import console, fmt, json_option, print_json
from rmax.errors import RmaxError
from rmax.params import Seconds, StorePath

config_option = click.option("--config", "config_path", default=None, metavar="FILE",
                             help="TOML file with the settings (an [agent] table); options override it.")

# Settings of the drift test, shared by run, status and fleet (text: checked by rmax.agent.config).
analysis_options = [
    click.option("--recent", default=None, metavar="N", help="Latest values tested against the baseline [3]."),
    click.option("--history", default=None, metavar="N", help="Earlier values that form the baseline [50]."),
    click.option("--min-history", default=None, metavar="N", help="Baseline values needed for a verdict [8]."),
    click.option("--alpha", default=None, metavar="P", help="Significance level of the drift test [0.01]."),
    click.option("--min-change", default=None, metavar="PCT",
                 help="The smallest worsening (percent of the baseline) called drift, however small its p [10]."),
]


def with_analysis(f):
    for opt in reversed(analysis_options):
        f = opt(f)
    return f


def load_config(config_path: str | None, options: dict):
    from rmax.agent.config import build, read_file

    file_values = read_file(config_path) if config_path else {}
    return build(file_values, options, source=f"{config_path}" if config_path else "config")


@click.group("agent")
def command():
    """A daemon on every node: its rates measured while it is idle, served as Prometheus metrics,
    and drift from its own history flagged.

    Example: rmax agent run --interval 900 --peers node2,node3"""


@command.command("run")
@config_option
@click.option("--interval", default=None, metavar="SECONDS", help="From one probe set's start to the next [900].")
@click.option("--max-load", default=None, metavar="TASKS",
              help="Idle: fewer runnable tasks of other processes than this, on average [0.5].")
@click.option("--window", default=None, metavar="SECONDS", help="Seconds the load is averaged over [3].")
@click.option("--retry", default=None, metavar="SECONDS", help="Wait before looking at a busy node again [60].")
@click.option("--listen", default=None, metavar="ADDR:PORT", help="Where metrics are served [127.0.0.1:9477].")
@click.option("--probes", default=None, metavar="LIST", help="Probes: peakflops,dgemm,stream,memlat[,pingpong].")
@click.option("--peers", default=None, metavar="HOSTS",
              help="Ping-pong latency and bandwidth to these hosts (e.g. node2,node3 or node[02-04]).")
@click.option("--launcher", default=None, metavar="NAME", help="MPI launcher for the ping-pong [mpirun; srun "
              "under Slurm].")
@vcluster_option
@click.option("--slurm", default=None, metavar="MODE", help="auto | on | off: skip nodes running Slurm jobs [auto].")
@click.option("--sets", default=None, metavar="N", help="Stop after N complete probe sets [0: never].")
@click.option("--probe-timeout", default=None, metavar="SECONDS", help="Kill a probe that takes longer [120].")
@click.option("--textfile", default=None, metavar="DIR", help="Also write the metrics to DIR/rmax.prom, atomically, "
              "for node_exporter's textfile collector.")
@with_analysis
def run_cmd(config_path, **options):
    """Measure this node on a schedule while it is idle, and serve the rates (foreground, for systemd).

    Each probe is a stored run labelled 'agent'; one stopped by arriving work is stored as interrupted."""
    from rmax.agent.daemon import run_agent

    cfg = load_config(config_path, options)
    run_agent(cfg, say)


def say(line: str) -> None:
    """One line of the agent's log on stdout, at once (the journal and the tests read it as it comes)."""
    click.echo(line)
    sys.stdout.flush()


def _when(unix: float | None) -> str:
    return datetime.fromtimestamp(unix).astimezone().strftime("%m-%d %H:%M:%S") if unix else "—"



@command.command("status")
@config_option
@click.option("--host", default=None, help="Node whose probes to show (default: this host).")
@with_analysis
@json_option
def status_cmd(config_path, host, as_json, **options):
    """This node's latest rates against its own baseline, and which have drifted."""
    from rmax.agent.view import node_view
    from rmax.store import open_store

    cfg = load_config(config_path, options)
    with open_store(reading=True) as store:
        view = node_view(store, cfg, host)
    if as_json:
        print_json(view)
        return
    if not view["rates"]:
        console.print(f"no agent probes of {view['host']} in the store yet (rmax agent run measures them)")
        return
    from rmax.terminal import Table

    t = Table(title=f"rmax agent: {view['host']} against its own history (alpha {cfg.alpha:g}, "
                f"drift from {cfg.min_change:g}% worse)")
    for c in ("rate (statistic)", "latest", "baseline", "change", "p", "state", "last probe"):
        t.add_column(c)
    for r in view["rates"]:
        dev = None if r["deviation"] is None else 100 * r["deviation"]
        state = Text("DRIFT", style="bold red") if r["drift"] else r["state"] + (
            f" {r['n_baseline']}/{cfg.min_history}" if r["state"] == "learning" else "")
        t.add_row(f"{r['probe']}" + (f" to {r['peer']}" if r["peer"] else "") + f" ({r['statistic']})",
                  shown(r["latest"], r["unit"]), shown(r["baseline"], r["unit"]), f"{dev:+.1f}%" if dev is not None else "—",
                  fmt(r["p_value"], ".2g"), state, _when(r["last_probe_at"]))
    console.print(t)
    drifted = [r["probe"] + (f" to {r['peer']}" if r["peer"] else "") for r in view["rates"] if r["drift"]]
    learning = sum(r["state"] == "learning" for r in view["rates"])
    if drifted:
        console.print(f"drift: {', '.join(drifted)}")
    elif learning == len(view["rates"]):
        console.print("no verdict yet: every rate is still learning its baseline")
    else:
        console.print("no drift" + (f" in the {len(view['rates']) - learning} rates tested; {learning} still learning "
                                    "their baseline" if learning else ""))


@command.command("check")
@config_option
@click.option("--probes", default=None, metavar="LIST", help="This node's probes to run: dgemm,stream,peakflops,memlat "
              "[dgemm].")
@click.option("--timeout", default=None, type=Seconds(hi=3600), help="Longest the probes may take, all together [30].")
@click.option("--max-load", default=None, metavar="TASKS", help="Busy at this many runnable tasks of other processes "
              "[0.5].")
@click.option("--window", default=None, metavar="SECONDS", help="Seconds the load is averaged over [3].")
@click.option("--slurm", default=None, metavar="MODE", help="auto | on | off: a node running another Slurm job is busy "
              "[auto].")
@click.option("--unhealthy-load", default=None, metavar="TASKS", help="Unhealthy at this many runnable tasks of other "
              "processes with no Slurm job on the node: a runaway process [1].")
@click.option("--max-throttled", default=None, metavar="PERCENT", help="Unhealthy when a CPU quota throttled the "
              "check's cgroup this share of the load window [20].")
@click.option("--min-cpu-quota", default=None, metavar="CPUS", help="Unhealthy under a CPU quota of fewer CPUs [0.5].")
@click.option("--drain", is_flag=True, help="Drain this node in Slurm, with the line as the reason, when unhealthy, "
              "on drift or failure.")
@click.option("--resume", is_flag=True, help="Return this node to service when it passes and a check drained it "
              "(its reason begins 'rmax: '); a node drained by anyone else stays drained.")
@click.option("--node", default=None, metavar="NAME", help="Slurm's name of this node [$SLURMD_NODENAME, else the host "
              "name].")
@with_analysis
@json_option
def check_cmd(config_path, probes, timeout, drain, resume, node, as_json, **options):
    """A health check for Slurm's HealthCheckProgram or a prolog: the node's CPU quota, load and
    throttling, then this node's quick probes tested against its own baseline. One line within
    --timeout of the start; exit 1 when unhealthy, on drift or a failed probe, 0 when ok, busy or
    undecided (no baseline yet). Never drains unless --drain, never resumes unless --resume.

    Example: rmax agent check --drain --resume --timeout 20"""
    from rmax.agent.check import CHECK_PROBES, DEFAULT_TIMEOUT, check, drain as drain_node, node_name, resume as back
    from rmax.agent.config import PEER_PROBE
    from rmax.store import open_store

    cfg = load_config(config_path, {**options, "probes": probes})
    if probes and PEER_PROBE in cfg.probes:
        raise RmaxError(f"--probes: the check runs this node's own probes, not {PEER_PROBE}")
    name = node_name(node)
    with open_store() as store:
        outcome = check(cfg, store, cfg.probes if probes else CHECK_PROBES, timeout or DEFAULT_TIMEOUT, name)
    line = outcome.line
    if drain and outcome.exit_code:
        line += f" ({drain_node(outcome)})"
    done = back(outcome) if resume else None
    if done:
        line += f" ({done})"
    if as_json:
        print_json({**outcome.as_dict(), "line": line})
    else:
        click.echo(f"rmax agent check: {name}: {line}")
    sys.exit(outcome.exit_code)   # click returns, not raises, its own Exit when not standalone


@command.command("fleet")
@click.argument("sources", nargs=-1, required=True, metavar="STORE_OR_URL...")
@config_option
@with_analysis
@json_option
def fleet_cmd(sources, config_path, as_json, **options):
    """Rank nodes by each rate and name the outliers: results stores (every node in each) or agent
    addresses (http://node:9477)."""
    from rmax.agent.fleet import load, rank

    cfg = load_config(config_path, options)
    views = load(list(sources), cfg)
    ranking = rank(views, cfg.alpha, cfg.min_shift)
    if as_json:
        print_json({"nodes": [v["host"] for v in views], "alpha": cfg.alpha, "min_change": cfg.min_change,
                    "rates": ranking})
        return
    from rmax.terminal import Table

    for r in ranking:
        t = Table(title=f"{r['probe']} ({r['statistic']}, median of the latest {cfg.recent}), best first")
        for c in ("rank", "node", "value", "n", "p (worse than the rest)", "outlier"):
            t.add_column(c)
        for i, n in enumerate(r["nodes"], 1):
            t.add_row(str(i), n["host"], shown(n["median"], r["unit"]), str(n["n"]), fmt(n["p_value"], ".3g"),
                      Text("OUTLIER", style="bold red") if n["outlier"] else "")
        console.print(t)
    outliers = sorted({h for r in ranking for h in r["outliers"]})
    console.print(f"outliers: {', '.join(outliers)}" if outliers else "no outlier")


@command.command("dashboard")
def dashboard_cmd():
    """Print the Grafana dashboard for the agents' metrics (JSON already: no --json).

    Example: rmax agent dashboard > rmax-agent.json, then import it in Grafana and choose the
    Prometheus data source; its fleet panel needs the rules of `rmax agent rules`."""
    from rmax.agent.monitoring import DASHBOARD, shipped

    click.echo(shipped(DASHBOARD), nl=False)


@command.command("rules")
def rules_cmd():
    """Print the Prometheus recording and alerting rules for the agents' metrics (YAML): drift from a
    node's own baseline, a node slower than its fleet, probes gone stale, a node too busy to probe.

    Example: rmax agent rules > /etc/prometheus/rmax.rules.yml, named under rule_files."""
    from rmax.agent.monitoring import RULES, shipped

    click.echo(shipped(RULES), nl=False)


@command.command("install")
@click.option("--output", default="/etc/systemd/system/rmax-agent.service", show_default=True, metavar="FILE",
              help="Unit file to write.")
@config_option
@click.option("--db", "db_path", default=None, type=StorePath(), help="Results store of the agent (RMAX_DB) "
              "[/var/lib/rmax-agent/results.db].")
@click.option("--rmax", "rmax_path", default=None, metavar="PATH", help="rmax executable (default: this one).")
@click.option("--user", default=None, metavar="NAME", help="Run as this existing user [a user systemd makes for it: "
              "DynamicUser=].")
@click.option("--force", is_flag=True, help="Replace an existing unit file.")
@json_option
def install_cmd(output, config_path, db_path, rmax_path, user, force, as_json):
    """Write a hardened systemd unit that runs `rmax agent run` unprivileged, and say how to enable it."""
    from rmax.agent.systemd import hidden_from_others, interpreter, unit_text, write_unit

    textfile = ()
    if config_path:
        config_path = str(Path(config_path).absolute())
        cfg = load_config(config_path, {})       # a unit that would fail at its first start is refused now
        textfile = (str(Path(cfg.textfile).absolute()),) if getattr(cfg, "textfile", None) else ()
    rmax_path = rmax_path or shutil.which("rmax") or str(Path(sys.executable).with_name("rmax"))
    if not Path(rmax_path).is_file():
        raise RmaxError(f"rmax executable {rmax_path} not found", hint="pass --rmax PATH")
    db = str(Path(db_path).absolute()) if db_path else None
    rmax_path = str(Path(rmax_path).absolute())
    python = interpreter(rmax_path)
    path = write_unit(output, unit_text(rmax_path, config_path, db, user, textfile, python), force)
    hidden = None if user else next(filter(None, map(hidden_from_others, filter(None, (rmax_path, python)))), None)
    if hidden:      # the unit is right; where rmax is installed is not
        click.echo(f"rmax: warning: other users cannot reach {hidden}, so the service's own user cannot start "
                   f"{rmax_path}; install rmax where they can (/opt, /usr/local) or pass --user", err=True)
    enable = f"systemctl daemon-reload && systemctl enable --now {path.name}"
    if as_json:
        print_json({"unit": str(path), "enable": enable})
    else:
        click.echo(f"wrote {path}\nenable it with: {enable}")
