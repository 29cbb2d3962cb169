"""ptrans: HPC Challenge's PTRANS (native/hpcc/cmd_ptrans.c): C = A^T + C for n x n matrices spread
block-cyclically over a P x Q grid of ranks, in GB/s (n^2 x 8 bytes over the slowest rank's
time); repeated on random placements of the ranks on the grid, HPCC's figure the lowest.
Checked as HPCC checks it: max|C - (A^T + B)| / max|A^T + B| / (eps x n) at most 16."""

from __future__ import annotations

import math
from dataclasses import dataclass

from rmax.bench.family import POLLING_RANKS_PER_CORE, SurveyPlan, option, register
from rmax.families.hpcc_family import HpccFamily, HpccPoint, HpccSummary
from rmax.bench.netlaunch import check_memory
from rmax.errors import RmaxError
from rmax.params import Count


@dataclass
class PtransOptions:
    n: int = option(4000, "Order of the matrices (HPCC: half of HPL's N).", type=Count(1, 10_000_000), quick=1000)
    nb: int = option(64, "Block size (HPCC: HPL's NB).", type=Count(1, 4096))
    p: int = option(0, "Grid rows (0 with --q 0: the squarest grid P <= Q of all ranks).", type=Count(0, 1 << 20))
    q: int = option(0, "Grid columns; P x Q must be the rank count.", type=Count(0, 1 << 20))
    repeats: int = option(5, "Transposes, each on a random placement of the ranks on the grid (HPCC: 5, its "
                          "figure the lowest).", type=Count(1, 100))
    self_test_corrupt: bool = option(False, "Damage one element of C before the check: the run must come out invalid.",
                                     flag="--self-test-corrupt")


@dataclass
class PtransSummary(HpccSummary):
    SCHEMA = "rmax.ptrans/1"


@register
class Ptrans(HpccFamily):
    """HPC Challenge's PTRANS: the parallel transpose C = A^T + C of block-cyclic n x n matrices
    over a P x Q grid, GB/s; the lowest of --repeats random placements of the ranks (HPCC's
    figure); it passes when its residual against A^T + B is at most 16."""

    name = "ptrans"
    title = "HPCC PTRANS: parallel matrix transpose C = A^T + C (MB/s)"
    Options = PtransOptions
    Summary = PtransSummary
    native = ("rmax-hpcc", "ptrans")
    survey = SurveyPlan("PTRANS (parallel transpose) over the nodes", 0.01, 52, ranks="all", per_core=POLLING_RANKS_PER_CORE)
    example = "rmax bench ptrans --np 4 --n 4000 --nb 64"
    BASE = "bytes/s"
    CHECK = ("residual", "residual / (eps n)")
    KERNELS = {"mpi": "PTRANS_GBs"}
    SIZE = "order"

    def check(self, o, ctx):
        np_ = self.ranks(ctx)
        if (o.p == 0) != (o.q == 0):
            raise RmaxError("--p and --q: give both or neither", hint="leave both out for the squarest grid")
        if o.p and o.p * o.q != np_:
            raise RmaxError(f"a {o.p} x {o.q} grid needs {o.p * o.q} ranks, not {np_}",
                            hint=f"pass --np {o.p * o.q}, or leave --p and --q out")
        if o.nb > o.n:
            raise RmaxError(f"--nb {o.nb} is larger than --n {o.n}", hint="use a block size at most the order")
        # A, C and the exchange's two buffers: four times a rank's share of the matrix
        here = ctx.spec.ranks_on_this_host() if ctx.spec else np_
        check_memory(4 * 8 * math.ceil(o.n * o.n / np_), here, "ptrans's matrices")

    def kernel_argv(self, o):
        a = ["--n", str(o.n), "--nb", str(o.nb), "--repeats", str(o.repeats)]
        return a + (["--p", str(o.p), "--q", str(o.q)] if o.p else [])

    def timeout(self, o):
        # Per repeat: the matrices generated and checked (~1e7 elements/s on one rank) and moved
        # at 10 MB/s, slower than any link or a crowded virtual cluster's share of one.
        return 120.0 + o.repeats * (4 * o.n * o.n / 1e7 + 8 * o.n * o.n / 1e7)

    def statistic(self, p: HpccPoint) -> str:
        return f"lowest of {len(p.repeats) or 1} random placements of the ranks (HPCC's)"
