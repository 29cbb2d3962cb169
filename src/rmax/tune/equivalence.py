"""Parameters that cannot change the run on a given process grid, from HPL's algorithm: such
values are one candidate, not several, so the search never spends trials on them and never
credits them an effect.

- PMAP places rank r at (r / Q, r % Q) or (r % P, r / P): with P = 1 or Q = 1 both place
  every rank at the same spot.
- SWAP and its threshold choose how pivot rows travel between the P process rows; with P = 1
  the pivot rows are local and every variant is the same local swap (HPL's update takes its
  1 x Q branch, rmax-hpl swaps in place). Elsewhere the threshold steers only the mix (SWAP 2).
- BCAST sends the factored panel along a process row of Q. With Q = 1 there is no broadcast.
  A row of Q processes (root 0, the others 1 .. Q-1 from the root) gets these messages:

      Q = 2: 1ring, 1ringM, 2ring, 2ringM, longM: 0->1 (the whole panel);
             long: the panel in two halves, spread then rolled, to the same neighbour.
      Q = 3: 1ringM, 2ring, 2ringM: 0->1, 0->2;  1ring: 0->1->2;  long, longM: pieces.
      Q = 4: rmax-hpl: all six differ (its 2ring halves are 0->1->2 and 0->3);
             HPL's own (hpcc, xhpl): 1ringM, 2ring and 2ringM all send 0->1, 0->2, 2->3.
      Q >= 5: all six differ.

  (From rmax-hpl's plans, native/hpl/bcast_*.c, and HPL 2.3's HPL_bcast_* routines.)
Each class is represented by the stock HPL.dat's value when it is in the class, else by its
first value, so the stock is never rewritten by the rule."""

from __future__ import annotations

# HPL 2.3's shipped HPL.dat: its first value of every variant field (rmax.tune.space.Space.stock).
STOCK = {"pmap": 0, "pfact": 0, "rfact": 0, "nbmin": 2, "ndiv": 2, "bcast": 0, "depth": 0, "swap": 2,
         "swap_threshold": 64}
REFERENCE_ENGINES = ("hpcc", "xhpl")    # built from HPL's own source: its broadcast routines

_BCAST_Q2 = [[0, 1, 2, 3, 5], [4]]
_BCAST_Q3 = [[1, 2, 3], [0], [4], [5]]
_BCAST_Q4_REFERENCE = [[1, 2, 3], [0], [4], [5]]


def _engine_family(engine: str) -> str:
    return "reference" if engine.split(":", 1)[0] in REFERENCE_ENGINES else "rmax"


def classes(param: str, cand: dict, engine: str = "rmax") -> tuple[list[list], str] | None:
    """The classes of `param`'s values that run identically for cand's grid (and swap), with
    why; None when every value is its own class."""
    p, q = cand["grid"]
    if param == "pmap" and (p == 1 or q == 1):
        return [[0, 1]], f"on a {p} x {q} grid row- and column-major mapping place every rank alike"
    if param in ("swap", "swap_threshold") and p == 1:
        return [None], "with P = 1 the pivot rows are local: every swap variant is the same local swap"
    if param == "swap_threshold" and cand.get("swap") != 2:
        return [None], "the threshold steers only the mixed swap (SWAP 2)"
    if param == "bcast":
        if q == 1:
            return [[0, 1, 2, 3, 4, 5]], "with Q = 1 there is no panel broadcast"
        if q == 2:
            return _BCAST_Q2, ("on a row of 2 every variant but long sends the whole panel to the one neighbour "
                               "(long sends it in two halves)")
        if q == 3:
            return _BCAST_Q3, "on a row of 3, 1ringM, 2ring and 2ringM all send the panel from the root to both others"
        if q == 4 and _engine_family(engine) == "reference":
            return _BCAST_Q4_REFERENCE, "on a row of 4 HPL's 1ringM, 2ring and 2ringM all send 0->1, 0->2, 2->3"
    return None


def _representative(param: str, value, cls: list | None, values: list):
    members = values if cls is None else [v for v in values if v in cls]
    if value not in members:
        return value
    return STOCK[param] if STOCK.get(param) in members else members[0]


def canonical(cand: dict, values: dict, engine: str = "rmax") -> dict:
    """cand with every parameter that cannot matter on its grid set to its class's representative
    (values: param -> the space's values for it)."""
    out = dict(cand)
    for param in ("pmap", "bcast", "swap", "swap_threshold"):     # swap before its threshold
        got = classes(param, out, engine)
        if got is None or param not in out:
            continue
        for cls in got[0]:
            if cls is None or out[param] in cls:
                out[param] = _representative(param, out[param], cls, list(values[param]))
                break
    return out


def coinciding(grids, values: dict, engine: str = "rmax") -> list[tuple[tuple, str, list[list], str]]:
    """(grid, param, the groups of its values that run alike there, why), for the session's header."""
    out = []
    for g in grids:
        probe = {**STOCK, "grid": tuple(g)}
        for param in ("pmap", "swap", "swap_threshold", "bcast"):
            got = classes(param, probe, engine)
            if got is None or param not in values:
                continue
            cls, why = got
            groups = [[v for v in values[param] if c is None or v in c] for c in cls]
            groups = [grp for grp in groups if len(grp) > 1]
            if groups:
                out.append((tuple(g), param, groups, why))
    return out
