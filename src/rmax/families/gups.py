"""gups: HPC Challenge's RandomAccess (native/hpcc/cmd_gups.c): random XOR updates of a table of
64-bit words, 4 a word, from HPCC's pseudo-random stream, in GUP/s; single, star and MPI forms
(the MPI table spread over the ranks, each update sent to its word's owner with at most 1024
held, HPCC's look-ahead rule). Checked as HPCC checks it: the same updates again must restore
the table, and at most 1 % of its words may be wrong."""

from __future__ import annotations

from dataclasses import dataclass

from rmax.bench.family import POLLING_RANKS_PER_CORE, SurveyPlan, option, register
from rmax.families.hpcc_family import HpccFamily, HpccSummary, forms_option, require_pow2
from rmax.bench.netlaunch import check_memory
from rmax.errors import RmaxError
from rmax.hpl.hpcc_kernels import LOCAL_GUPS, MPI_GUPS
from rmax.params import Count


@dataclass
class GupsOptions:
    table_size: int = option(1 << 22, "Words (64-bit) of each rank's table in the single and star forms, a power "
                             "of two (HPCC: the largest in half of a rank's memory).", type=Count(1024, 1 << 40),
                             quick=1 << 20, show="4Mi words (32 MiB)")
    mpi_table_size: int = option(0, "Words of the MPI form's table, spread over the ranks, a power of two (0: the "
                                 "largest <= ranks x --table-size).", type=Count(0, 1 << 46))
    forms: tuple[str, ...] = forms_option("one table over all ranks")
    self_test_corrupt: bool = option(False, "Damage 2% of the table before the check: the run must come out invalid.",
                                     flag="--self-test-corrupt")


@dataclass
class GupsSummary(HpccSummary):
    SCHEMA = "rmax.gups/1"


def mpi_table(o, ranks: int) -> int:
    """The MPI form's table: the option's, else the largest power of two <= ranks x the local table."""
    return o.mpi_table_size or 1 << (ranks * o.table_size).bit_length() - 1


@register
class Gups(HpccFamily):
    """HPC Challenge's RandomAccess: updates of random words of a table (T[a] ^= a), GUP/s =
    updates / s / 1e9, in HPCC's forms; a form passes when replaying its updates leaves at most
    1 % of the table wrong."""

    name = "gups"
    title = "HPCC RandomAccess: random table updates (GUP/s), single, star and MPI"
    Options = GupsOptions
    Summary = GupsSummary
    native = ("rmax-hpcc", "gups")
    survey = SurveyPlan("RandomAccess (GUPS) over the nodes", 0.01, 51, ranks="all", per_core=POLLING_RANKS_PER_CORE)
    example = "rmax bench gups --np 2 --table-size 1048576"
    BASE = "updates/s"
    CHECK = ("error_fraction", "wrong words / table")
    KERNELS = {"single": "SingleRandomAccess_GUPs", "star": "StarRandomAccess_GUPs", "mpi": "MPIRandomAccess_GUPs"}
    SIZE = "words"

    def check(self, o, ctx):
        np_ = self.ranks(ctx)
        require_pow2(o.table_size, "--table-size")
        if o.mpi_table_size:
            require_pow2(o.mpi_table_size, "--mpi-table-size")
        if "mpi" in o.forms and mpi_table(o, np_) < 1024 * np_:
            raise RmaxError(f"--mpi-table-size: {mpi_table(o, np_)} words is below 1024 a rank on {np_} ranks",
                            hint=f"use {1 << (1024 * np_ - 1).bit_length()} words or more")
        here = ctx.spec.ranks_on_this_host() if ctx.spec else np_
        check_memory(8 * max(o.table_size, mpi_table(o, np_) // np_ + 1), here, "gups's tables")

    def kernel_argv(self, o):
        return ["--table-size", str(o.table_size), "--mpi-table-size", str(o.mpi_table_size), *self.forms_argv(o)]

    def timeout(self, o):
        # Each form updates its table twice (the run, the check), 4 updates a word, at the slowest
        # rates measured here (hpcc_kernels: a busy 2-core node); the MPI table is at most 2^46 words.
        local = sum(f in o.forms for f in ("single", "star")) * 2 * 4 * o.table_size / (LOCAL_GUPS * 1e9)
        spread = 2 * 4 * (o.mpi_table_size or 2 * o.table_size) / (MPI_GUPS * 1e9) if "mpi" in o.forms else 0.0
        return 120.0 + local + spread
