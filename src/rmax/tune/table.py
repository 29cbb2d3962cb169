"""The live table, in the shape of Table 1 of the Kronos article (Eadline and Layton: test, Ns,
Nb, PxQ, library,
% of peak, GFLOPS), with HPL's variant code, the time and the change against
the start (at the start's N only: "—" at another N). One row is printed as each trial ends, so it works in a terminal,
a pipe and a log alike."""

from __future__ import annotations

from rmax.model.hpl_model import hpl_flops
from rmax.tune.space import SWAP_NAMES, grid_text, variant_code

COLUMNS = (("#", 4), ("N", 7), ("NB", 4), ("P x Q", 6), ("T/V", 9), ("Swap", 8), ("BLAS", 9),
           ("% Rpeak", 8), ("GFLOPS", 9), ("Time (s)", 9), ("vs start", 9), ("Note", 0))


def header() -> str:
    return "  ".join(name.rjust(w) if w else name for name, w in COLUMNS)


def row(index: int, cand: dict, m, blas: str, rpeak: float | None, start: float | None, note: str = "") -> str:
    swap = SWAP_NAMES[cand["swap"]] + (f"/{cand['swap_threshold']}" if cand["swap"] == 2 else "")
    if m.ok:
        pct = f"{100 * m.gflops / rpeak:.1f}" if rpeak else "—"
        g = f"{m.gflops:.3f}"
        # From the GFLOPS (five significant digits) rather than HPL's two-decimal seconds.
        t = f"{hpl_flops(cand['n']) / (m.gflops * 1e9):.3f}"
        vs = f"{100 * (m.gflops / start - 1):+.1f}%" if start else "—"
    else:
        pct, g, vs = "—", m.status, "—"
        t = f"{m.seconds:.1f}"
    cells = (str(index), str(cand["n"]), str(cand["nb"]), grid_text(cand["grid"]), variant_code(cand), swap, blas,
             pct, g, t, vs, note)
    return "  ".join(c.rjust(w) if w else c for c, (_, w) in zip(cells, COLUMNS))
