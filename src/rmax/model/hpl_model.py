"""HPL's time model (REFERENCE.md section 1, from HPL's scalability analysis), plus
one calibrated term for what that analysis leaves out.

    T(N) = 2 gamma3 N^3 / (3 P Q)                        the trailing updates, all at DGEMM speed
         + beta_d N^2 (3P + Q) / (2 P Q)                  panel broadcasts and row swaps (bandwidth)
         + alpha N ((NB + 1) log2(P) + P) / NB            their start-up costs (latency)
         + kappa gamma3 N^2 NB / (2 P)                    panel factorisation (calibrated, see below)

Units: alpha in seconds per message, beta as the Hockney model and `rmax bench net`
give it, a bandwidth in bytes/s (the analysis wants seconds per double:
beta_d = 8 / beta), gamma3 in seconds per flop of one process's DGEMM.

What the analysis omits: it charges every flop at DGEMM speed. The panel
factorisation (about N^2 NB / 2 flops in all, done by one process column while
the others wait unless look-ahead hides it) runs at a small fraction of that
speed: pivot searches, narrow BLAS-2/3 calls, a message per column when P > 1.
At N = 10000 on this machine it is a quarter of the run time; at N = 1000 most
of it. The fourth term charges those flops at kappa times the DGEMM cost per
flop: kappa is dimensionless (how much slower than DGEMM a panel flop is), so it
carries over when the node gets faster or slower, and is fitted from measured
HPL runs (`calibrate_kappa`). kappa = 0 is the reference's model unchanged.

Still omitted: DGEMM's lower speed on the thin shapes of late iterations, the
solve's O(N^2) work, load imbalance of the block-cyclic layout, and contention
when several ranks share a node's memory bandwidth."""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass

from rmax.errors import RmaxError

BYTES_PER_DOUBLE = 8


def hpl_flops(n: float) -> float:
    """HPL's operation count, the one its GFLOPS are computed from."""
    return 2.0 / 3.0 * n ** 3 + 1.5 * n ** 2


def check_inputs(n: float, nb: int, p: int, q: int, alpha: float, beta: float, gamma3: float,
                 kappa: float = 0.0) -> None:
    if n < 1:
        raise RmaxError(f"N must be at least 1, not {n}")
    if nb < 1:
        raise RmaxError(f"NB must be at least 1, not {nb}")
    if p < 1 or q < 1:
        raise RmaxError(f"the process grid {p} x {q} needs P and Q of at least 1")
    for name, v, strict in (("alpha", alpha, False), ("beta", beta, True), ("gamma3", gamma3, True),
                            ("kappa", kappa, False)):
        if not math.isfinite(v) or v < 0 or (strict and v == 0):
            raise RmaxError(f"{name} must be {'positive' if strict else 'non-negative'}, not {v}")


@dataclass(frozen=True)
class HplTerms:
    compute_s: float     # 2 gamma3 N^3 / (3PQ)
    bandwidth_s: float   # beta_d N^2 (3P+Q) / (2PQ)
    latency_s: float     # alpha N ((NB+1) log2 P + P) / NB
    panel_s: float       # kappa gamma3 N^2 NB / (2P)

    @property
    def total_s(self) -> float:
        return self.compute_s + self.bandwidth_s + self.latency_s + self.panel_s

    def as_dict(self) -> dict:
        return {**asdict(self), "total_s": self.total_s}


def hpl_terms(n: float, nb: int, p: int, q: int, alpha: float, beta: float, gamma3: float,
              kappa: float = 0.0) -> HplTerms:
    check_inputs(n, nb, p, q, alpha, beta, gamma3, kappa)
    beta_d = BYTES_PER_DOUBLE / beta
    return HplTerms(
        compute_s=2.0 * gamma3 * n ** 3 / (3.0 * p * q),
        bandwidth_s=beta_d * n ** 2 * (3 * p + q) / (2.0 * p * q),
        latency_s=alpha * n * ((nb + 1) * math.log2(p) + p) / nb,
        panel_s=kappa * gamma3 * n ** 2 * nb / (2.0 * p),
    )


def predict_hpl(n: float, nb: int, p: int, q: int, alpha: float, beta: float, gamma3: float,
                kappa: float = 0.0) -> float:
    """Predicted HPL wall time in seconds (the tuner's entry point).

    alpha: s per message; beta: bytes/s; gamma3: s per DGEMM flop of one process;
    kappa: panel-factorisation cost per flop relative to DGEMM (0: the reference's model)."""
    return hpl_terms(n, nb, p, q, alpha, beta, gamma3, kappa).total_s


def measured_time(n: int, summary: dict) -> float:
    """A test's time from its GFLOPS when it has them: HPL prints seconds with two decimals
    (0.01 s at N = 500) but GFLOPS with five significant digits."""
    g = summary.get("gflops")
    if isinstance(g, (int, float)) and g > 0:
        return hpl_flops(n) / (g * 1e9)
    return float(summary["time_s"])


def predicted_gflops(n: float, seconds: float) -> float:
    return hpl_flops(n) / seconds / 1e9


def efficiency(terms: HplTerms) -> float:
    """Fraction of the DGEMM-bound time: 1 / (1 + the other terms / compute), as in the reference."""
    return terms.compute_s / terms.total_s


# --- sizes and grids ------------------------------------------------------------------

GRID = re.compile(r"^\s*(\d+)\s*[xX*]\s*(\d+)\s*$")


def parse_grid(text: str) -> tuple[int, int]:
    m = GRID.match(text or "")
    if not m:
        raise RmaxError(f"malformed grid '{text}'", hint="write it as PxQ, e.g. 2x4")
    p, q = int(m.group(1)), int(m.group(2))
    if p < 1 or q < 1:
        raise RmaxError(f"grid '{text}': P and Q must be at least 1")
    return p, q


def square_grid(ranks: int) -> tuple[int, int]:
    """The most square P x Q = ranks with P <= Q (the reference's advice for most networks)."""
    if ranks < 1:
        raise RmaxError(f"a process grid needs at least 1 rank, not {ranks}")
    p = int(math.isqrt(ranks))
    while ranks % p:
        p -= 1
    return p, ranks // p


def n_for_memory(total_bytes: float, nb: int, p: int = 1, q: int = 1, fraction: float = 0.8) -> int:
    """The largest N whose 8 N^2 bytes fit in `fraction` of the memory, a multiple of NB x lcm(P, Q)
    so every process holds whole blocks (REFERENCE.md's tuning guidance)."""
    if total_bytes <= 0:
        raise RmaxError(f"memory must be positive, not {total_bytes} bytes")
    n = int(math.sqrt(fraction * total_bytes / BYTES_PER_DOUBLE))
    step = nb * math.lcm(p, q)
    if n >= step:
        return n - n % step
    return max(nb, n - n % nb) if n >= nb else max(n, 1)


# --- calibration of kappa --------------------------------------------------------------

@dataclass(frozen=True)
class Observation:
    """One measured HPL test with the machine rates that held when it ran."""
    n: int
    nb: int
    p: int
    q: int
    time_s: float
    alpha: float
    beta: float
    gamma3: float


@dataclass(frozen=True)
class Calibration:
    kappa: float
    kappa_stderr: float | None
    points: int
    rms_rel_error: float            # of the calibrated model on the points it was fitted to
    rms_rel_error_uncalibrated: float

    def as_dict(self) -> dict:
        return asdict(self)


def panel_unit(o: Observation) -> float:
    """The panel term's time for kappa = 1."""
    return o.gamma3 * o.n ** 2 * o.nb / (2.0 * o.p)


def calibrate_kappa(obs: list[Observation]) -> Calibration:
    """Least squares on relative errors, (T_model - t) / t, for the one linear parameter kappa >= 0."""
    if not obs:
        raise RmaxError("no measured HPL runs to calibrate the panel term from",
                        hint="run `rmax hpl run` at a few N first, or pass --kappa")
    base = [predict_hpl(o.n, o.nb, o.p, o.q, o.alpha, o.beta, o.gamma3) for o in obs]
    u = [panel_unit(o) for o in obs]
    t = [o.time_s for o in obs]
    sxx = sum((ui / ti) ** 2 for ui, ti in zip(u, t))
    sxy = sum((ti - bi) * ui / ti ** 2 for ti, bi, ui in zip(t, base, u))
    kappa = max(0.0, sxy / sxx) if sxx > 0 else 0.0
    rel = [(bi + kappa * ui - ti) / ti for bi, ui, ti in zip(base, u, t)]
    rel0 = [(bi - ti) / ti for bi, ti in zip(base, t)]
    dof = len(obs) - 1
    stderr = math.sqrt(sum(r * r for r in rel) / dof / sxx) if dof > 0 and sxx > 0 else None
    rms = math.sqrt(sum(r * r for r in rel) / len(rel))
    rms0 = math.sqrt(sum(r * r for r in rel0) / len(rel0))
    return Calibration(kappa, stderr, len(obs), rms, rms0)
