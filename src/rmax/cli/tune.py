"""`rmax tune`: automatic HPL tuning, noise-aware, resumable, explained."""

from __future__ import annotations

import click
from rich.text import Text

from rmax.cli.launch_options import launch_options
from rmax.cli.output import console, err_console, json_option, print_json
from rmax.params import Count, Duration, Number, OutputFile
from rmax.errors import RmaxError


def _preflight_engine(name: str) -> None:
    """A clear one-line error now, not after the session has started, when the engine cannot run."""
    import shutil
    import tempfile
    from pathlib import Path

    from rmax.hpl.dat import HplConfig
    from rmax.hpl.engines import get_engine

    work = Path(tempfile.mkdtemp(prefix="rmax-tune-check-"))
    try:
        get_engine(name).program(work, HplConfig())
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _check_budget(session_budget_s, trials, first_trials_s: float) -> None:
    if trials is not None and trials < 2:
        raise RmaxError(f"--trials {trials} is too small: a session needs at least 2 (the stock HPL.dat and one candidate)")
    if session_budget_s is not None and session_budget_s < first_trials_s:
        raise RmaxError(f"--budget {session_budget_s:.0f}s is too small for one trial: the stock HPL.dat and a first "
                        f"candidate take about {first_trials_s:.0f}s at this N",
                        hint="raise --budget, or lower N with --n or --mem-fraction")


def _print_summary(s: dict) -> None:
    b, start = s["best"], s["start"]
    x = start.get("gflops")
    console.print()
    if s.get("steps"):
        from rmax.tune.steps import TITLE, render

        console.print(TITLE, soft_wrap=True)
        for line in render(s["steps"]):
            console.print(line, soft_wrap=True)
        console.print()
    line = f"from {x:.3f} GFLOPS with the stock HPL.dat" if x else "the stock HPL.dat gave no valid result"
    gain = f" ({b['gain_pct']:+.1f}%" if b.get("gain_pct") is not None else ""
    if gain:
        gain += ", significant at 95%)" if b.get("significant") else ", not significant at 95%: within the noise)"
    console.print(f"{line} to {b['gflops']:.3f} GFLOPS{gain} at N {b['n']}, NB {b['nb']}, "
                  f"{b['grid'][0]} x {b['grid'][1]}, {b['code']} ({b['statistic']})")
    parts = []
    if b.get("pct_rpeak") is not None:
        parts.append(f"{b['pct_rpeak']:.1f}% of Rpeak ({s['rpeak_gflops']:.1f} GFLOPS, {s.get('rpeak_basis') or '?'})")
        if b["pct_rpeak"] > 100:
            parts.append("above the peak, so that peak was measured low: measure it again with `rmax bench peakflops`")
    if b.get("pct_dgemm_bound") is not None:
        parts.append(f"{b['pct_dgemm_bound']:.1f}% of the DGEMM bound ({s['dgemm_bound_gflops']:.1f} GFLOPS: "
                     f"{s.get('dgemm_source')})")
        if b["pct_dgemm_bound"] > 100:   # HPL cannot run faster than its own update: the bound was measured low
            parts.append("above the bound, so that DGEMM was measured low (a busy machine?): measure it again "
                         "with `rmax bench dgemm` on a quiet node")
    else:
        parts.append(f"DGEMM bound unknown: {s.get('dgemm_source')}")
    console.print("; ".join(parts))
    cv = s.get("noise_cv")
    console.print(f"run-to-run noise: {100 * cv:.1f}% (coefficient of variation of repeated candidates)" if cv
                  else "run-to-run noise: not measured (no candidate was repeated)")
    if s["effects"]:
        real = [e for e in s["effects"] if e.get("beyond_noise")]
        if real:
            eff = ", ".join(f"{e['param']} {100 * e['effect']:.1f}% (best {e['best_value']}, {e['method']})"
                            for e in real[:5])
            console.print(f"what mattered most (GFLOPS spread when it alone changes, beyond the noise): {eff}")
        rest = ", ".join(e["param"] for e in s["effects"] if not e.get("beyond_noise"))
        if rest and cv:
            console.print(f"within the run-to-run noise, so not credited: {rest}")
        elif rest:
            console.print(f"not judged, the noise being unmeasured (--repeats 2 or more measures it): {rest}")
    else:
        console.print("what mattered most: not separable from these trials (no parameter changed alone, and "
                      "the parameters changed together)")
    for n in s["strategy_notes"]:
        console.print(f"{s['strategy']}: {n}")
    console.print(f"best HPL.dat written to {b['hpl_dat']}")


@click.command("tune")
@click.option("--engine", default="rmax", show_default=True, metavar="rmax|hpcc|xhpl:PATH",
              help="The HPL binary to tune: rmax-hpl, Debian's hpcc, or your own xhpl.")
@click.option("--budget", type=Duration(), default=None, help="Wall-time budget, e.g. 30m, 90s, 2h (default 30m).")
@click.option("--trials", type=Count(1, 100000), default=None, help="Trial budget instead of (or as well as) --budget.")
@click.option("--mem-fraction", type=Number(0, 1, lo_open=True), default=0.8, show_default=True,
              help="Share of the ranks' memory the matrix may fill; refused above 0.95 without --force.")
@click.option("--force", is_flag=True, help="Allow --mem-fraction above 0.95.")
@click.option("--n", "n", type=Count(1, 1 << 24), default=None, help="Full problem size N (default: from memory).")
@click.option("--strategy", default="auto", show_default=True,
              type=click.Choice(["auto", "coordinate", "model", "bayes"]), help="Search strategy.")
@click.option("--repeats", type=Count(1, 1000), default=3, show_default=True,
              help="Repeat cap: samples per candidate before a close call counts as no gain.")
@click.option("--seed", type=Count(0, 2**32 - 1), default=0, show_default=True, help="Seed of the Bayesian sampler.")
@click.option("--threshold", type=Number(0, 1e30, lo_open=True), default=16.0, show_default=True,
              help="Residual check threshold of every trial (a FAILED check makes a trial invalid).")
@click.option("--out", default="HPL-tuned.dat", show_default=True, type=OutputFile(),
              help="Where the best HPL.dat is written.")
@click.option("--resume", "resume_id", default=None, metavar="ID", help="Continue an interrupted session.")
@launch_options(default_np="cores")
@json_option
@click.pass_context
def command(ctx, engine, budget, trials, mem_fraction, force, n, strategy, repeats, seed, threshold, out, resume_id,
            as_json, launcher, timeout, **opts):
    """Tune HPL automatically: search N, NB, P x Q and the algorithm variants with a
    noise-aware strategy, store every trial, and explain what mattered.

    Example: rmax tune --np 2 --trials 30 --n 6000"""
    from contextlib import nullcontext

    import click as _click

    from rmax.store import open_store
    from rmax.tune.session import Session, predicted_seconds
    from rmax.tune.settings import Settings, check_mem_fraction

    echo = (lambda line: None) if as_json else (lambda line: _click.echo(line))
    with open_store() as store:
        if resume_id:
            # A session continues with the settings it was started with (its trials compare only
            # under them); only the per-trial watchdog may change, e.g. after one set too short.
            given = sorted(f"--{name.replace('_', '-')}" for name in ctx.params
                           if name not in ("resume_id", "as_json", "timeout")
                           and ctx.get_parameter_source(name).name not in ("DEFAULT", "DEFAULT_MAP"))
            if given:
                raise RmaxError(f"--resume continues a session with its stored settings: {', '.join(given)} "
                                "cannot change them", hint="start a new session to tune with other settings "
                                "(--timeout alone may be given with --resume)")
            session = Session.resume(store, resume_id, echo)
            if ctx.get_parameter_source("timeout").name != "DEFAULT":
                session.set_timeout(timeout)
            _preflight_engine(session.settings.engine)
        else:
            warning = check_mem_fraction(mem_fraction, force)
            if warning:
                err_console.print(warning)
            from rmax.tune.strategies import get_strategy

            get_strategy(strategy)
            budget_s = budget if budget else (None if trials else 30 * 60.0)
            fixed_timeout = timeout if ctx.get_parameter_source("timeout").name != "DEFAULT" else None
            settings = Settings(engine=engine, launcher=launcher, strategy=strategy, trials=trials, budget_s=budget_s,
                                mem_fraction=mem_fraction, n=n, cap=repeats, seed=seed, out=out,
                                timeout=fixed_timeout, threshold=threshold, **opts)
            _preflight_engine(engine)
            if trials is not None:
                _check_budget(None, trials, 0)

            def check(space, facts):
                rate = facts["rate_guess_gflops"]
                _check_budget(budget_s, trials, predicted_seconds(space.n_full, rate)
                              + predicted_seconds(space.n_reduced, rate))

            session = Session.create(store, settings, echo, check=check)
        # A transient line under the table while a trial runs (rich keeps the echoed rows above it).
        live = err_console.is_terminal and not as_json
        status = err_console.status("") if live else nullcontext()
        if live:
            shown = session.echo
            session.on_progress = lambda p: status.update(Text(f"trial {p.short()}"))
            session.echo = lambda line: (status.update(""), shown(line))
        try:
            with session.run, status:
                summary = session.execute()
        except KeyboardInterrupt:
            err_console.print(f"session {session.run.id[:8]} interrupted: continue with "
                              f"`rmax tune --resume {session.run.id[:8]}`")
            raise
    if as_json:
        print_json({"id": session.run.id, **summary})
    else:
        _print_summary(summary)
