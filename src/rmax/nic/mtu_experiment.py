"""The MTU experiment, one workflow whatever the links (nic/mtu_links.py): per repeat, every MTU in
turn is set, the links probed and a short HPL run on every slot, each a child run of one
`experiment-mtu` run; the original MTUs come back at the end whatever happens. A probe whose traffic
fails at an MTU (a switch port that drops frames of that size) names it, and that MTU is measured no
further; the other MTUs go on. A probe that fails at an MTU whose traffic passed in an earlier repeat
is a lost repeat, not a finding; it and any figure that came back empty leave the experiment partial."""

from __future__ import annotations

from rmax.bench.family import RunContext
from rmax.families import run as run_family
from rmax.families.hpl import HPL
from rmax.errors import RmaxError
from rmax.hpl.dat import HplConfig
from rmax.launch import LaunchSpec
from rmax.model.hpl_model import square_grid
from rmax.native import executable
from rmax.nic.mtu_links import Links
from rmax.nic.mtu_results import Collector
from rmax.stats import MIN_CHANGE
from rmax.store import open_store


def run(links: Links, mtus: list[int], hpl_n: int, timeout: float, repeats: int):
    """The experiment's stored run (a RunRecord), its summary's `results` one row per MTU
    (nic/mtu_results.Collector.rows). hpl_n 0: no HPL; timeout: seconds per HPL run."""
    grid = square_grid(sum(h.slots for h in links.hpl_hosts))
    engine = hpl_engine()
    col = Collector(mtus)
    params = {"mtus": mtus, **links.params, "hpl_n": hpl_n, "engine": engine, "grid": list(grid),
              "bytes": links.size, "repeats": repeats}
    with open_store() as store:
        with store.start_run("experiment-mtu", params=params, hosts=links.hosts) as exp:
            with links.changes() as apply:
                # The MTUs take turns within each repeat, so a slow spell of the host lands on
                # every MTU alike instead of on whichever was measured then.
                for rep in range(repeats):
                    for m in mtus:
                        if m in col.errors:
                            continue   # traffic already failed at this MTU: no point in stalling again
                        _step(store, exp.id, links, col, m, rep + 1, apply, hpl_n, grid, engine, timeout)
                        exp.update(summary=_summary(col, repeats, engine, grid, links.summary))
            if col.gaps():
                exp.finish("partial", "repeats that measured nothing: " + "; ".join(col.gaps()))
        return store.get(exp.id)


def hpl_engine() -> str:
    """rmax-hpl where it is built, else the reference HPL inside hpcc."""
    try:
        executable("rmax-hpl")
        return "rmax"
    except RmaxError:
        return "hpcc"


def _step(store, parent: str, links: Links, col: Collector, mtu: int, repeat: int, apply, hpl_n: int, grid,
          engine: str, timeout: float) -> None:
    """One MTU of one repeat: set it, probe, and the short HPL when traffic passed."""
    applied = apply(mtu)
    if applied is not None:
        col.extra[mtu]["applied"] = applied
    runs: list[str] = []
    try:
        metrics = links.probe(store, parent, mtu, repeat, runs)
    except RmaxError as e:   # RunFailed too: e.g. a switch port that drops frames of mtu bytes
        if col.measured(mtu):
            col.lose(mtu, repeat, e.message, runs)
            return
        between = links.between
        names = f"{', '.join(between[:-1])} and {between[-1]}"
        col.fail(mtu, f"traffic failed at MTU {mtu} between {names} ({e.message}); check that every switch "
                      f"port between them carries frames of {mtu} bytes", runs)
        return
    col.add(mtu, runs, **metrics)
    if hpl_n:
        _short_hpl(store, parent, links, col, mtu, hpl_n, grid, engine, timeout)


def _short_hpl(store, parent: str, links: Links, col: Collector, mtu: int, hpl_n: int, grid, engine: str,
               timeout: float) -> None:
    """The short HPL on every slot of the links' hosts, stored under parent; its GFLOPS collected, and
    its status when it is the first or not ok."""
    cfg = HplConfig(ns=[hpl_n], nbs=[96], grids=[tuple(grid)])
    spec = LaunchSpec([], np=sum(h.slots for h in links.hpl_hosts), hosts=list(links.hpl_hosts),
                      hostfile=links.hpl_hostfile)
    rec = run_family(HPL, HPL.options(config=cfg, engine=engine),
                     RunContext(store=store, parent=parent, label=f"MTU {mtu}", spec=spec, launcher=links.launcher,
                                timeout=timeout))
    best = HPL.load(rec).best()
    col.add(mtu, [rec.id], hpl_gflops=best.gflops if best else None)
    if rec.status != "ok" or "hpl_status" not in col.extra[mtu]:
        col.extra[mtu]["hpl_status"] = rec.status


def _summary(col: Collector, repeats: int, engine: str, grid, extra: dict) -> dict:
    return {"results": col.rows(), "repeats": repeats, "baseline_mtu": col.mtus[0], "engine": engine,
            "grid": list(grid), "statistic": "per MTU: median over repeats and their range; change against the "
                                             "baseline MTU only when Welch's t-test over repeats, Holm-adjusted, "
                                             f"gives p < 0.05 and it is at least {MIN_CHANGE:.0%}",
            **extra}
