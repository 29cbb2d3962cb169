"""One HPL test's result as every engine reports it (rmax-hpl, hpcc, a user's xhpl): its parameters,
time, rate, residual verdict and, from rmax-hpl, its phases and trajectory. The benchmark family
(rmax.families.hpl) stores it; the engines and HPL's output parser make it."""

from __future__ import annotations

from dataclasses import dataclass

from rmax.hpl.dat import BCAST_NAMES
from rmax.hpl.progress import Trajectory


@dataclass
class Phase:
    max: float                  # seconds, over ranks
    min: float


@dataclass
class HplTest:
    """One test: its parameters (the variant as integers, as HPL.dat numbers them), its time and rate."""

    code: str                   # HPL's T/V code, e.g. WR11C2R4
    n: int
    nb: int
    p: int
    q: int
    pmap: int
    depth: int
    bcast: int
    rfact: int
    ndiv: int
    pfact: int
    nbmin: int
    time_s: float
    gflops: float
    residual: float | None = None
    verdict: str = "not checked"             # PASSED, FAILED, or not checked (negative threshold)
    phases: dict[str, Phase] | None = None   # rmax-hpl: seconds per phase
    phases_wait: dict[str, Phase] | None = None      # the same phases: time blocked in MPI, plus "total"
    phases_compute: dict[str, Phase] | None = None   # and the rest
    run: str | None = None      # the test's own `hpl-test` run (in the execution's summary)
    trajectory: Trajectory | None = None   # rmax-hpl: the running rate panel by panel (rmax.hpl.progress)

    def params(self) -> dict:
        """What the test's `hpl-test` run records as its parameters."""
        return {"n": self.n, "nb": self.nb, "p": self.p, "q": self.q, "code": self.code, "pmap": self.pmap,
                "depth": self.depth, "bcast": self.bcast, "rfact": self.rfact, "ndiv": self.ndiv,
                "pfact": self.pfact, "nbmin": self.nbmin, "bcast_name": BCAST_NAMES[self.bcast]}
