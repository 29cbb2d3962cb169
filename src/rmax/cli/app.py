"""The `rmax` group, its global options, and how errors reach the user.

Exit codes: 0 success, 1 a run failed or the store cannot be used, 2 usage error or unusable input,
3 a partial survey or experiment, 128 + the signal's number when stopped by one (SIGINT 130,
SIGTERM 143, SIGHUP 129). Errors are one line with a hint; tracebacks only with --debug."""

from __future__ import annotations

import importlib
import os
import signal
import sys

import click

from rmax import __version__
from rmax.params import StorePath
from rmax.errors import RmaxError, Stopped

# name -> module that defines a click command of that name; imported lazily so
# `rmax --help` and quick commands do not pay for numpy and matplotlib.
COMMANDS = {
    "survey": ("rmax.cli.survey", "characterise the cluster: inventory, benchmarks, HPL, in one stored survey"),
    "info": ("rmax.cli.info", "node inventory: CPU, caches, memory, NICs, MPI, BLAS, Rpeak"),
    "report": ("rmax.cli.report", "self-contained HTML report of a survey, made from the store"),
    "accept": ("rmax.cli.accept", "cluster acceptance: pass, fail or undecided per node and metric (references, fleet)"),
    "compare": ("rmax.cli.compare", "two runs or surveys side by side, with the significance of each change"),
    "runs": ("rmax.cli.runs", "list, show, export and delete stored runs"),
    "bench": ("rmax.cli.bench", "run one benchmark family and store the result"),
    "launch": ("rmax.cli.launch", "check where MPI ranks land through a launcher"),
    "hpl": ("rmax.cli.hpl", "run HPL (rmax-hpl, hpcc or xhpl) from an HPL.dat and store every test"),
    "tune": ("rmax.cli.tune", "automatic HPL tuning: noise-aware, resumable, explained"),
    "vcluster": ("rmax.cli.vcluster", "a virtual cluster of network namespaces on this machine"),
    "topology": ("rmax.cli.topology", "infer switch groups from measured latency and bandwidth"),
    "slurm": ("rmax.cli.slurm", "write sbatch scripts that run rmax inside an allocation"),
    "net": ("rmax.cli.netdoctor", "NIC settings on every node and what they cost"),
    "experiment": ("rmax.cli.experiment", "measure before and after a setting change (e.g. MTU)"),
    "scale": ("rmax.cli.scale", "measure speedup vs ranks and fit the generalised Amdahl model"),
    "model": ("rmax.cli.model", "speedup curves and HPL performance predictions from models"),
    "cost": ("rmax.cli.cost", "dollars per GFLOPS and MFLOPS per watt, with what-if alternatives"),
    "agent": ("rmax.cli.agent", "per-node daemon: rates measured while idle, Prometheus metrics, drift flagged"),
}


class LazyGroup(click.Group):
    def list_commands(self, ctx):
        return sorted(COMMANDS)

    def get_command(self, ctx, name):
        if name not in COMMANDS:
            return None
        module = importlib.import_module(COMMANDS[name][0])
        return getattr(module, "command")

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            # The reader left (`rmax runs list | head -3`): no failure of ours, so exit 0 quietly, not
            # click's 1. Python's own flush of stdout at exit would fail again: it goes to /dev/null.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            raise click.exceptions.Exit(0) from None

    def format_commands(self, ctx, formatter):
        # One-line summaries without importing every command module.
        rows = [(name, COMMANDS[name][1]) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="rmax")
@click.option("--debug", is_flag=True, help="Show tracebacks and launcher commands.")
@click.option("--db", "db_path", type=StorePath(), envvar="RMAX_DB",
              help="Results store (default $RMAX_DB or $XDG_DATA_HOME/rmax/results.db).")
@click.pass_context
def cli(ctx: click.Context, debug: bool, db_path: str | None) -> None:
    """rmax measures, models and tunes Linux compute clusters.

    Every measurement is stored; `rmax runs list` shows them."""
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug
    if db_path:
        os.environ["RMAX_DB"] = db_path


def _one_line(text: str) -> str:
    """A message quotes user input: a newline or escape sequence in it must not add lines or drive the terminal."""
    from rmax.cli.output import printable

    return printable(text)


def _raise_interrupt(signum, frame):
    raise Stopped(signal.Signals(signum).name)


_pending: list[str] = []   # a stop Python swallowed, still to be raised in the command


def _raise_pending(signum, frame):
    if _pending:
        raise Stopped(_pending[0])


def _redeliver(unraisable, default=sys.unraisablehook) -> None:
    """A stop raised while a destructor or weakref callback runs is ignored by Python (printed, and
    the command goes on to exit 0): raise it again 10 ms later, by then in the command itself
    (anything done here, a re-sent signal included, would land in this hook again)."""
    exc = unraisable.exc_value
    if isinstance(exc, KeyboardInterrupt):
        _pending[:] = [exc.args[0] if exc.args else "SIGINT"]
        signal.signal(signal.SIGALRM, _raise_pending)
        signal.setitimer(signal.ITIMER_REAL, 0.01)
        return
    default(unraisable)


def _stop_status(exc: BaseException | None) -> int:
    """The shell's status for a command ended by a signal, 128 + its number (SIGTERM 143, SIGHUP
    129), which a batch system or a script tells apart; Ctrl-C (and click's abort) 130."""
    if isinstance(exc, click.exceptions.Abort):   # click's, raised from the stop it caught
        exc = exc.__cause__
    name = exc.args[0] if isinstance(exc, Stopped) and exc.args else "SIGINT"
    try:
        return 128 + signal.Signals[name]
    except KeyError:
        return 130


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    debug = "--debug" in argv or os.environ.get("RMAX_DEBUG") == "1"
    # SIGTERM and SIGHUP end a run like Ctrl-C does, so it is stored as interrupted; Ctrl-C too raises
    # errors.Stopped (where Python's own handler is set: a SIGINT ignored by the shell stays ignored).
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _raise_interrupt)
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        signal.signal(signal.SIGINT, _raise_interrupt)
    sys.unraisablehook = _redeliver
    # A terminal whose locale cannot encode "—" or "…" (ISO-8859-1) gets "?" for them, not a crash.
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure") and "utf" not in (stream.encoding or "utf").lower():
            stream.reconfigure(errors="replace")
    try:
        cli.main(args=argv, prog_name="rmax", standalone_mode=False)
        if _pending:    # the command finished before the swallowed stop could be raised again
            raise Stopped(_pending[0])
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)
    except click.UsageError as e:   # click's own refusals, in the same one line as rmax's
        where = f"see '{e.ctx.command_path} --help'" if e.ctx else None
        click.echo(f"rmax: error: {_one_line(e.format_message())}" + (f"\n  hint: {where}" if where else ""), err=True)
        sys.exit(e.exit_code)
    except click.ClickException as e:
        e.show()
        sys.exit(e.exit_code)
    except (KeyboardInterrupt, click.exceptions.Abort) as stop:
        from rmax.store.store import stopped_here

        try:
            stopped_here("interrupted by a signal")
        except KeyboardInterrupt:   # a second stop: the next opener reaps what is left
            pass
        click.echo("rmax: interrupted", err=True)
        sys.exit(_stop_status(stop))
    except RmaxError as e:
        if debug:
            raise
        click.echo(f"rmax: error: {_one_line(e.message)}" + (f"\n  hint: {_one_line(e.hint)}" if e.hint else ""),
                   err=True)
        sys.exit(e.exit_code)
    except BrokenPipeError:
        sys.exit(0)
    except Exception as e:  # a bug: say so in one line, keep the traceback for --debug
        if debug:
            raise
        click.echo(f"rmax: internal error: {type(e).__name__}: {e} (run with --debug for the traceback)", err=True)
        sys.exit(1)
