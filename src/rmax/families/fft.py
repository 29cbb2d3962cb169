"""fft: HPC Challenge's FFT (native/hpcc/cmd_fft.c): one 1-D complex double transform of n points
through FFTW, and through FFTW's MPI interface over all ranks, in GFLOPS (5 n log2 n over the
time of one forward transform); single, star and MPI forms. Checked as HPCC checks it: the
backward transform must give the input back within maxerr / ln(n) / eps < 16."""

from __future__ import annotations

import math
from dataclasses import dataclass

import click

from rmax.bench.family import POLLING_RANKS_PER_CORE, SurveyPlan, option, register
from rmax.families.hpcc_family import HpccFamily, HpccSummary, forms_option
from rmax.bench.netlaunch import check_memory
from rmax.errors import RmaxError
from rmax.params import Count, Seconds

PLANS = ("measure", "estimate", "patient")


@dataclass
class FftOptions:
    n: int = option(1 << 20, "Points of each rank's transform in the single and star forms.",
                    type=Count(8, 1 << 30), quick=1 << 16)
    mpi_n: int = option(0, "Points of the MPI form's transform, a multiple of the ranks squared (0: ranks x --n, "
                        "rounded down to one).", type=Count(0, 1 << 40))
    plan: str = option("measure", "FFTW's planning of the forward transform (HPCC's: measure; estimate plans at "
                       "once, for a slower transform).", type=click.Choice(PLANS), quick="estimate")
    plan_seconds: float = option(10.0, "FFTW's time limit for planning one transform (0: none; its measured "
                                 "planning of an MPI transform can take minutes).", type=Seconds(0, 86400, lo_open=False),
                                 quick=1.0)
    forms: tuple[str, ...] = forms_option("one transform over all ranks")
    self_test_corrupt: bool = option(False, "Damage one point of the forward result: the run must come out invalid.",
                                     flag="--self-test-corrupt")


@dataclass
class FftSummary(HpccSummary):
    SCHEMA = "rmax.fft/1"


def mpi_points(o, ranks: int) -> int:
    return o.mpi_n or o.n * ranks // (ranks * ranks) * ranks * ranks


@register
class Fft(HpccFamily):
    """HPC Challenge's FFT: one forward 1-D complex transform through FFTW (MPI form: FFTW's MPI
    interface), GFLOPS = 5 n log2(n) / s / 1e9; it passes when the backward transform gives the
    input back (maxerr / ln(n) / eps < 16)."""

    name = "fft"
    title = "HPCC FFT: 1-D complex transform through FFTW (GFLOPS), single, star and MPI"
    Options = FftOptions
    Summary = FftSummary
    native = ("rmax-hpcc", "fft")
    survey = SurveyPlan("FFT over the nodes (on request: --steps fft)", 0.03, 53, ranks="all", on_request=True,
                        per_core=POLLING_RANKS_PER_CORE)
    example = "rmax bench fft --np 2 --n 1048576"
    BASE = "flop/s"
    CHECK = ("error", "maxerr / ln(n) / eps")
    KERNELS = {"single": "SingleFFT_Gflops", "star": "StarFFT_Gflops", "mpi": "MPIFFT_Gflops"}
    SIZE = "points"

    def check(self, o, ctx):
        np_ = self.ranks(ctx)
        if "mpi" in o.forms:
            m = mpi_points(o, np_)
            if m < np_ * np_ or m % (np_ * np_):
                raise RmaxError(f"--mpi-n: {m} points is not a multiple of {np_ * np_} (the ranks squared)",
                                hint=f"use {np_ * np_ * max(1, m // (np_ * np_))}")
        here = ctx.spec.ranks_on_this_host() if ctx.spec else np_
        # two vectors of 16-byte points, and FFTW's MPI work space as large again
        check_memory(16 * 2 * max(o.n, 2 * mpi_points(o, np_) // np_ + 1), here, "fft's vectors")

    def kernel_argv(self, o):
        return ["--n", str(o.n), "--mpi-n", str(o.mpi_n), "--plan", o.plan, "--plan-seconds", str(o.plan_seconds),
                *self.forms_argv(o)]

    def timeout(self, o):
        # Each form plans two transforms (FFTW stops its search near --plan-seconds; with none, a
        # thousand tries) and runs them with the check, at 0.1 GFLOPS, far below FFTW on any CPU.
        top = max(o.n, o.mpi_n or 2 * o.n)
        one = 5 * top * math.log2(top) / 1e8
        plan = 2 * o.plan_seconds if o.plan_seconds else 1000 * one
        return 120.0 + len(o.forms) * (plan + 10 * one)
