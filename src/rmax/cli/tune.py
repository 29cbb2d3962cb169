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
    from rmax.tune.session import MIN_TRIALS

    if trials is not None and trials < MIN_TRIALS:
        raise RmaxError(f"--trials {trials} is too small: a session needs at least {MIN_TRIALS} (the stock HPL.dat, "
                        "one block of pairs for the search and one for the confirmation at full N)")
    if session_budget_s is not None and session_budget_s < first_trials_s:
        raise RmaxError(f"--budget {session_budget_s:.0f}s is too small for one trial: the stock HPL.dat, one block "
                        f"of pairs and the confirmation at full N take about {first_trials_s:.0f}s at this N",
                        hint="raise --budget, or lower N with --n or --mem-fraction")


def _print_summary(s: dict) -> None:
    from rmax.tune.effects import text as effect_text

    b, start = s["best"], s["start"]
    x = start.get("gflops")
    console.print()
    if s.get("steps"):
        from rmax.tune.steps import TITLE, render

        console.print(TITLE, soft_wrap=True)
        for line in render(s["steps"]):
            console.print(line, soft_wrap=True)
        console.print()
    for c in s.get("machine_changes") or []:
        console.print(f"{c['text']}; {c['settled'] or 'not settled'}; measured again: "
                      f"{len(c['retried'])} comparison(s) set aside", soft_wrap=True)
    line = (f"from {x:.3f} GFLOPS with the stock HPL.dat ({start['statistic']})" if x
            else "the stock HPL.dat gave no valid result at full N")
    gain = ""
    if b.get("gain_interval_pct"):
        lo, hi = b["gain_interval_pct"]
        gain = f" ({b['gain_pct']:+.1f}% in pairs with the stock, [{lo:+.1f}%, {hi:+.1f}%] at 95%)"
    elif b.get("gain_pct") == 0.0:
        gain = " (the stock itself: no candidate beat it in pairs at full N)"
    console.print(f"{line} to {b['gflops']:.3f} GFLOPS{gain} at N {b['n']}, NB {b['nb']}, "
                  f"{b['grid'][0]} x {b['grid'][1]}, {b['code']} ({b['statistic']})", soft_wrap=True)
    if b.get("note"):
        console.print(f"confirmation: {b['note']}", soft_wrap=True)
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
    console.print("; ".join(parts), soft_wrap=True)
    n = s.get("n") or {}
    if n.get("memory_run"):
        m = n["memory_run"]
        from rmax.tune.session import _duration

        console.print(f"N {n['full']} from {n['source']}; memory's N is {m['n']}: at the {m['rate_gflops']:.2f} GFLOPS "
                      f"measured at N {m['at_n']} such a run would take about {_duration(m['seconds'])}", soft_wrap=True)
    cv = s.get("noise_cv")
    console.print(f"run-to-run noise: {100 * cv:.1f}% (how far the incumbent's runs stray from its level between "
                  "blocks)" if cv else "run-to-run noise: not measured (too few blocks)", soft_wrap=True)
    for line in s.get("not_searched") or []:
        console.print(f"not searched, {line}", soft_wrap=True)
    real = [e for e in s["effects"] if e.get("beyond_noise")]
    if real:
        console.print("what mattered most (measured in pairs, the 95% interval excluding no change): "
                      + "; ".join(effect_text(e) for e in real[:5]), soft_wrap=True)
    else:
        console.print("what mattered most: no parameter changed alone showed a paired interval excluding no change",
                      soft_wrap=True)
    rest = [e for e in s["effects"] if not e.get("beyond_noise")]
    if rest:
        console.print("measured in pairs, no change shown: " + ", ".join(e["param"] for e in rest), soft_wrap=True)
    for note in s["strategy_notes"]:
        console.print(f"{s['strategy']}: {note}", soft_wrap=True)
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
@click.option("--repeats", type=Count(3, 1000), default=5, show_default=True,
              help="Most pairs in one block (challenger and incumbent in turn) before a close call counts as no gain.")
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
                from rmax.tune.session import CONFIRM_RUNS, SEARCH_BLOCK_RUNS

                rate = facts["rate_guess_gflops"]
                _check_budget(budget_s, trials, (1 + CONFIRM_RUNS) * predicted_seconds(space.n_full, rate)
                              + SEARCH_BLOCK_RUNS * predicted_seconds(space.n_reduced, rate))

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
