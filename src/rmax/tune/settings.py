"""What a tuning session was asked to do: stored in the session's run so that
`--resume ID` continues with exactly the same engine, ranks, budget and seed."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from rmax.errors import RmaxError

MEM_WARN = 0.90      # above this, warn: I-Cluster's nodes swapped with large matrices (Richard et al.)
MEM_REFUSE = 0.95    # above this, refuse unless --force


@dataclass
class Settings:
    engine: str = "rmax"
    np: int | None = None
    hosts: str | None = None
    hostfile: str | None = None
    launcher: str | None = None
    bind: str = "core"
    blas_threads: int = 1
    oversubscribe: bool = False
    net_if: str | None = None         # --net-if: the interface MPI uses between hosts
    strategy: str = "auto"
    trials: int | None = None
    budget_s: float | None = None
    mem_fraction: float = 0.8
    n: int | None = None              # explicit full N (else from memory)
    cap: int = 5                      # pairs in one block at most (rmax.tune.noise)
    seed: int = 0
    out: str = "HPL-tuned.dat"
    timeout: float | None = None      # fixed per-trial watchdog; None: derived from the predicted time
    threshold: float = 16.0           # residual check threshold written into every trial's HPL.dat

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "Settings":
        return cls(**{k: v for k, v in d.items() if k in cls.__dataclass_fields__})


def check_mem_fraction(fraction: float, force: bool) -> str | None:
    """None, or a warning to print; raises for values that would make nodes swap."""
    if not 0 < fraction <= 1:
        raise RmaxError(f"--mem-fraction must be in (0, 1], not {fraction}")
    if fraction > MEM_REFUSE and not force:
        raise RmaxError(f"--mem-fraction {fraction} leaves under {100 * (1 - MEM_REFUSE):.0f}% of memory to the OS "
                        "and MPI; I-Cluster's nodes swapped at large N (Richard et al.)",
                        hint="use 0.8 (the usual guess), or --force to insist")
    if fraction > MEM_WARN:
        return (f"warning: --mem-fraction {fraction}: above {MEM_WARN} nodes may swap (I-Cluster's did, "
                "Richard et al.), which ruins the measurement")
    return None
