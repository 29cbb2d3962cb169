"""The benchmark families, one module each (`MODULES`), and the ways to reach them by name:
`get` for a command, `family_of`/`loaded` for a stored run, `run` to measure and store.

The framework they are built on (Family, Summary, options, views, the runner, the kernels'
launchers) is rmax.bench; it knows no family. A family registers itself when its module is
imported, so a reader imports only the families it meets."""

from __future__ import annotations

import importlib
from typing import Any

from rmax.bench.family import FAMILIES, Family, RunContext, StaleSummary
from rmax.bench.view import Figure
from rmax.errors import RmaxError

# The modules that define families: rmax.families.<module>. Importing one registers its family.
MODULES = ("stream", "peakflops", "cpurate", "memlat", "memcopy", "oslat", "dgemm", "blas_compare", "hpl",
           "net", "coll", "ring", "bisect", "matrix", "mbw", "mlat", "rma", "nbc", "gups", "ptrans", "fft")


def families() -> dict[str, Family]:
    """Every registered family, by name (importing their modules on first use)."""
    for m in MODULES:
        importlib.import_module(f"rmax.families.{m}")
    return FAMILIES


def get(name: str) -> Family:
    fams = families()
    if name not in fams:
        raise RmaxError(f"unknown benchmark family '{name}'", hint=f"one of: {', '.join(sorted(fams))}")
    return fams[name]


# A family whose module is not named for it; every other family's module bears its name.
MODULE_OF = {"blas": "blas_compare"}


def family_of(run) -> Family | None:
    """The family a stored run belongs to (by its kind), or None. Only that family's module is
    imported: `runs list` shows a few kinds, and importing all 21 modules cost it 0.3 s."""
    module = MODULE_OF.get(run.kind, run.kind)
    if run.kind not in FAMILIES and module in MODULES:
        importlib.import_module(f"rmax.families.{module}")
    return FAMILIES.get(run.kind)


def loaded(run) -> tuple[Family, Any] | None:
    """(family, typed summary) of a stored run, or None when it is no family's, or of an older shape."""
    fam = family_of(run)
    if fam is None:
        return None
    try:
        return fam, fam.load(run)
    except StaleSummary:
        return None


def headline_figure(run, role: str) -> Figure | None:
    """The headline figure playing `role` (view.ROLES) of a family's stored run, or None."""
    return role_figure(loaded(run), role)


def role_figure(got: tuple[Family, Any] | None, role: str) -> Figure | None:
    """headline_figure of a run already `loaded`."""
    return next((f for f in got[0].headline(got[1]) if f.role == role), None) if got else None


def run(family: Family | str, options=None, ctx: RunContext | None = None):
    """Measure with `family` and store the run: the entry point of `rmax bench NAME`, a survey's
    step, the tuner and the agent alike. Options the machine cannot run are refused first."""
    fam = get(family) if isinstance(family, str) else family
    ctx = ctx or RunContext()
    o = options if options is not None else fam.options(ctx.quick)
    fam.check(o, ctx)
    return fam.execute(o, ctx)
