"""--kappa / --tau: the HPL model's calibrated overhead term given by hand (rmax.model.hpl_model.OVERHEADS)."""

from __future__ import annotations

import click

from rmax.params import Number
from rmax.errors import RmaxError


def overhead_options(f):
    f = click.option("--tau", type=Number(0), default=None,
                     help="Overhead term: seconds per matrix column look-ahead cannot hide (default: calibrated).")(f)
    return click.option("--kappa", type=Number(0), default=None,
                        help="Overhead term: panel flops at KAPPA x the DGEMM cost (default: calibrated).")(f)


def given_overhead(kappa: float | None, tau: float | None):
    """The Overhead the user gave, or None to calibrate it."""
    from rmax.model.hpl_model import Overhead

    if kappa is not None and tau is not None:
        raise RmaxError("give --kappa or --tau, not both", hint="they are two forms of the same overhead term")
    if kappa is not None:
        return Overhead("panel", kappa)
    if tau is not None:
        return Overhead("column", tau)
    return None
