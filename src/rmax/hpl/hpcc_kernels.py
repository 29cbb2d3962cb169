"""hpcc's kernels besides HPL: the results of theirs rmax shows (from hpcc's summary block), and
the time they add to a run, which the hpcc engine's watchdog allows for.

hpcc (HPC Challenge 1.5) always runs RandomAccess, PTRANS, DGEMM, STREAM, FFT and the
latency/bandwidth tests before HPL, each sized from the memory of the largest HPL N (its
summary block says so: DGEMM_N, STREAM_VectorSize, RandomAccess_N, FFT_N). "Star" kernels run
on every rank at once and report the mean over ranks; "Single" ones run on one rank while the
others wait; "MPI" ones and PTRANS use all ranks together."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class Kernel:
    key: str          # the key in hpcc's summary block
    title: str
    unit: str
    statistic: str


_STAR, _SINGLE, _ALL = ("mean over ranks, all ranks at once (hpcc's Star)", "one rank alone (hpcc's Single)",
                        "all ranks together")
KERNELS = (
    Kernel("MPIRandomAccess_GUPs", "RandomAccess, MPI (whole table)", "GUP/s", _ALL),
    Kernel("StarRandomAccess_GUPs", "RandomAccess, per rank", "GUP/s", _STAR),
    Kernel("SingleRandomAccess_GUPs", "RandomAccess, one rank", "GUP/s", _SINGLE),
    Kernel("MPIFFT_Gflops", "FFT, MPI", "GFLOPS", _ALL),
    Kernel("StarFFT_Gflops", "FFT, per rank", "GFLOPS", _STAR),
    Kernel("SingleFFT_Gflops", "FFT, one rank", "GFLOPS", _SINGLE),
    Kernel("PTRANS_GBs", "PTRANS (parallel transpose)", "GB/s", _ALL),
    Kernel("StarSTREAM_Triad", "STREAM Triad, per rank", "GB/s", _STAR),
    Kernel("SingleSTREAM_Triad", "STREAM Triad, one rank", "GB/s", _SINGLE),
    Kernel("StarDGEMM_Gflops", "DGEMM, per rank", "GFLOPS", _STAR),
    Kernel("SingleDGEMM_Gflops", "DGEMM, one rank", "GFLOPS", _SINGLE),
)
BY_KEY = {k.key: k for k in KERNELS}
NAMES = "RandomAccess, PTRANS, DGEMM, STREAM, FFT and the latency/bandwidth tests"


def results(block: dict[str, str]) -> dict[str, float]:
    """The KERNELS' values in hpcc's key=value block, as numbers (absent or unreadable ones left out)."""
    out = {}
    for k in KERNELS:
        try:
            v = float(block[k.key])
        except (KeyError, ValueError):
            continue
        if math.isfinite(v):
            out[k.key] = v
    return out


# The allowance. Measured here (hpcc 1.5, 2 ranks on one 2-core node, 1 BLAS thread, wall time of
# `mpirun hpcc` against its HPL_time): N=2000 3.1 s in all, HPL 0.09 s; N=4000 9.6 s, HPL 0.73 s;
# N=2000 again with the node busy with other work: 17 s in all, HPL 0.26 s.
# The rest is mostly RandomAccess (its table is half the memory: 4 updates a word, each run then
# checked) and grows as N^2; DGEMM grows as N^3 like HPL. So, term by term:
#   DGEMM: Star and Single, each 2 n^3 flops with n = N / sqrt(3 ranks) (3 matrices in a rank's
#     share of the memory; hpcc's DGEMM_N), so per rank 2/sqrt(3 ranks) of HPL's 2/3 N^3 / ranks,
#     at a rate no lower than HPL's: that share of the time HPL is allowed.
#   RandomAccess on one rank (Star, Single; standard and LCG): a table of the largest power of two
#     of words <= N^2 / (2 ranks), 4 updates a word, run and check, at LOCAL_GUPS or better
#     (0.057-0.13 GUP/s measured here).
#   RandomAccess over MPI (standard and LCG): the table of N^2 / 2 words, at MPI_GUPS or better
#     (0.0019-0.023 GUP/s measured here, the lowest on the busy node), each run stopped at hpcc's own 60 s time bound
#     (MPIRandomAccess_TimeBound), its check as long again.
#   The rest (STREAM, FFT, PTRANS, latency/bandwidth, bounded at 10 s and 30 s by hpcc itself;
#     1-2 s here in all): FIXED_S.
LOCAL_GUPS, MPI_GUPS = 0.01, 0.001
RA_TIME_BOUND_S = 60.0
FIXED_S = 60.0


def _pow2_floor(x: float) -> float:
    return 2.0 ** math.floor(math.log2(x)) if x >= 1 else 1.0


def allowance(n: int, ranks: int, hpl_seconds: float) -> float:
    """Seconds to allow beyond `hpl_seconds` (what HPL alone may take) for hpcc's other kernels,
    sized as hpcc sizes them from the largest N on `ranks` ranks."""
    ranks = max(ranks, 1)
    dgemm = 2.0 / math.sqrt(3.0 * ranks) * hpl_seconds
    local = 4 * 2 * 4 * _pow2_floor(n * n / (2.0 * ranks)) / (LOCAL_GUPS * 1e9)
    mpi_run = min(4 * _pow2_floor(n * n / 2.0) / (MPI_GUPS * 1e9), RA_TIME_BOUND_S)
    return dgemm + local + 2 * 2 * mpi_run + FIXED_S
