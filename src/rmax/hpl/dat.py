"""HPL.dat: the 31-line input format of HPL (REFERENCE.md section 1), read,
validated and written. The same fields are accepted as JSON."""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

from rmax.errors import RmaxError

MAX_LIST = 20
PFACTS = "LCR"  # left, Crout, right: digits 0, 1, 2
BCAST_NAMES = ("1ring", "1ringM", "2ring", "2ringM", "long", "longM")


@dataclass
class HplConfig:
    ns: list[int] = field(default_factory=lambda: [1000])
    nbs: list[int] = field(default_factory=lambda: [192])
    pmap: int = 0                       # 0 row-major, 1 column-major
    grids: list[tuple[int, int]] = field(default_factory=lambda: [(1, 1)])
    threshold: float = 16.0
    pfacts: list[int] = field(default_factory=lambda: [2])
    nbmins: list[int] = field(default_factory=lambda: [4])
    ndivs: list[int] = field(default_factory=lambda: [2])
    rfacts: list[int] = field(default_factory=lambda: [1])
    bcasts: list[int] = field(default_factory=lambda: [1])
    depths: list[int] = field(default_factory=lambda: [1])
    swap: int = 2
    swap_threshold: int = 64
    l1_form: int = 0                    # 0 transposed, 1 not
    u_form: int = 0
    equilibration: int = 1
    alignment: int = 8
    output_file: str = "HPL.out"
    device: int = 6                     # 6 stdout, 7 stderr, else the file

    @property
    def max_ranks(self) -> int:
        return max(p * q for p, q in self.grids)

    def tests(self):
        """Every combination, in HPL's loop order: grid, N, NB, DEPTH, BCAST, RFACT, PFACT, NBMIN, NDIV."""
        for p, q in self.grids:
            for n in self.ns:
                for nb in self.nbs:
                    for depth in self.depths:
                        for bcast in self.bcasts:
                            for rfact in self.rfacts:
                                for pfact in self.pfacts:
                                    for nbmin in self.nbmins:
                                        for ndiv in self.ndivs:
                                            yield dict(n=n, nb=nb, p=p, q=q, depth=depth, bcast=bcast,
                                                       rfact=rfact, pfact=pfact, nbmin=nbmin, ndiv=ndiv)

    def validate(self) -> None:
        for name, values, low in (("N", self.ns, 0), ("NB", self.nbs, 1), ("NBMIN", self.nbmins, 1),
                                  ("NDIV", self.ndivs, 2), ("DEPTH", self.depths, 0)):
            if not values:
                raise RmaxError(f"HPL.dat: no value for {name}")
            if len(values) > MAX_LIST:
                raise RmaxError(f"HPL.dat: {len(values)} values for {name}, at most {MAX_LIST}")
            bad = [v for v in values if v < low]
            if bad:
                raise RmaxError(f"HPL.dat: {name} must be >= {low}, found {bad[0]}")
        for name, values, top in (("PFACT", self.pfacts, 2), ("RFACT", self.rfacts, 2), ("BCAST", self.bcasts, 5)):
            if not values or len(values) > MAX_LIST:
                raise RmaxError(f"HPL.dat: {name} needs 1 to {MAX_LIST} values")
            bad = [v for v in values if not 0 <= v <= top]
            if bad:
                raise RmaxError(f"HPL.dat: {name} must be 0..{top}, found {bad[0]}")
        if not self.grids or len(self.grids) > MAX_LIST:
            raise RmaxError(f"HPL.dat: 1 to {MAX_LIST} process grids are needed")
        for p, q in self.grids:
            if p < 1 or q < 1:
                raise RmaxError(f"HPL.dat: grid {p} x {q}: P and Q must be >= 1")

    def variant_code(self, t: dict) -> str:
        """HPL's result code, e.g. WR11C2R4."""
        return (f"W{'RC'[self.pmap]}{t['depth']}{t['bcast']}{PFACTS[t['rfact']]}{t['ndiv']}"
                f"{PFACTS[t['pfact']]}{t['nbmin']}")

    def to_dict(self) -> dict:
        d = asdict(self)
        d["grids"] = [list(g) for g in self.grids]
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "HplConfig":
        known = set(cls.__dataclass_fields__)
        unknown = set(d) - known
        if unknown:
            raise RmaxError(f"unknown HPL field(s): {', '.join(sorted(unknown))}", hint=f"known: {', '.join(sorted(known))}")
        d = dict(d)
        if "grids" in d:
            d["grids"] = [tuple(g) for g in d["grids"]]
        cfg = cls(**d)
        cfg.validate()
        return cfg


class _Lines:
    """Token access by HPL.dat line number with errors that name the line."""

    def __init__(self, text: str, source: str):
        self.lines = text.splitlines()
        self.source = source

    def tokens(self, number: int, what: str) -> list[str]:
        if number > len(self.lines):
            raise RmaxError(f"{self.source}: ends at line {len(self.lines)}, but line {number} ({what}) is needed",
                            hint="an HPL.dat has 31 lines")
        toks = self.lines[number - 1].split()
        if not toks:
            raise RmaxError(f"{self.source}:{number}: {what}: the line is empty")
        return toks

    def number(self, number: int, what: str, kind=int):
        return self.numbers(number, what, 1, kind)[0]

    def numbers(self, number: int, what: str, count: int, kind=int) -> list:
        toks = self.tokens(number, what)
        if len(toks) < count:
            raise RmaxError(f"{self.source}:{number}: {what}: expected {count} value(s), found {len(toks)}")
        out = []
        for t in toks[:count]:
            try:
                v = kind(t)
                if isinstance(v, float) and not math.isfinite(v):
                    raise ValueError
            except ValueError:
                raise RmaxError(f"{self.source}:{number}: {what}: '{t}' is not a number") from None
            out.append(v)
        return out

    def count(self, number: int, what: str) -> int:
        n = self.number(number, f"number of {what}")
        if not 1 <= n <= MAX_LIST:
            raise RmaxError(f"{self.source}:{number}: number of {what} must be 1..{MAX_LIST}, not {n}")
        return n


def parse(text: str, source: str = "HPL.dat") -> HplConfig:
    L = _Lines(text, source)
    c = HplConfig()
    c.output_file = L.tokens(3, "output file name")[0]
    c.device = L.number(4, "device out")
    c.ns = L.numbers(6, "Ns", L.count(5, "problem sizes"))
    c.nbs = L.numbers(8, "NBs", L.count(7, "block sizes"))
    c.pmap = L.number(9, "PMAP")
    ngrids = L.count(10, "process grids")
    ps, qs = L.numbers(11, "Ps", ngrids), L.numbers(12, "Qs", ngrids)
    c.grids = list(zip(ps, qs))
    c.threshold = L.number(13, "threshold", float)
    c.pfacts = L.numbers(15, "PFACTs", L.count(14, "PFACTs"))
    c.nbmins = L.numbers(17, "NBMINs", L.count(16, "NBMINs"))
    c.ndivs = L.numbers(19, "NDIVs", L.count(18, "NDIVs"))
    c.rfacts = L.numbers(21, "RFACTs", L.count(20, "RFACTs"))
    c.bcasts = L.numbers(23, "BCASTs", L.count(22, "BCASTs"))
    c.depths = L.numbers(25, "DEPTHs", L.count(24, "DEPTHs"))
    # The reference's clamping of out-of-range switches (REFERENCE.md section 1).
    swap = L.number(26, "SWAP")
    c.swap = swap if swap in (0, 1, 2) else 1
    c.swap_threshold = L.number(27, "swapping threshold")
    l1, u = L.number(28, "L1 form"), L.number(29, "U form")
    c.l1_form, c.u_form = (l1 if l1 in (0, 1) else 0), (u if u in (0, 1) else 0)
    eq = L.number(30, "equilibration")
    c.equilibration = eq if eq in (0, 1) else 1
    align = L.number(31, "memory alignment")
    c.alignment = align if align > 0 else 4
    if c.pmap not in (0, 1):
        raise RmaxError(f"{source}:9: PMAP must be 0 (row-major) or 1 (column-major), not {c.pmap}")
    c.validate()
    return c


def read(path: str | Path) -> HplConfig:
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as e:
        raise RmaxError(f"cannot read {p}: {e.strerror}") from None
    if p.suffix == ".json":
        try:
            return HplConfig.from_dict(json.loads(text))
        except json.JSONDecodeError as e:
            raise RmaxError(f"{p}: not valid JSON ({e.msg} at line {e.lineno})") from None
        except TypeError as e:
            raise RmaxError(f"{p}: {e}") from None
    return parse(text, str(p))


def _row(values, label: str, width: int = 12) -> str:
    return (" ".join(str(v) for v in values)).ljust(width) + " " + label


def render(c: HplConfig, title: str = "HPL input written by rmax") -> str:
    """The 31-line HPL.dat text for c (readable by xhpl, hpcc's hpccinf.txt and rmax-hpl)."""
    lines = [
        title,
        "(HPL reads the leading values of lines 3-31; the rest of each line is a note)",
        _row([c.output_file], "output file"),
        _row([c.device], "where results go: 6 stdout, 7 stderr, other: the output file"),
        _row([len(c.ns)], "how many problem sizes"),
        _row(c.ns, "problem sizes N"),
        _row([len(c.nbs)], "how many block sizes"),
        _row(c.nbs, "block sizes NB"),
        _row([c.pmap], "process mapping: 0 row-major, 1 column-major"),
        _row([len(c.grids)], "how many process grids"),
        _row([p for p, _ in c.grids], "grid rows P"),
        _row([q for _, q in c.grids], "grid columns Q"),
        _row([c.threshold], "residual threshold (negative: no check)"),
        _row([len(c.pfacts)], "how many panel factorisations"),
        _row(c.pfacts, "panel factorisation: 0 left, 1 Crout, 2 right"),
        _row([len(c.nbmins)], "how many recursion stopping sizes"),
        _row(c.nbmins, "NBMIN: columns at which recursion stops (>= 1)"),
        _row([len(c.ndivs)], "how many recursion splits"),
        _row(c.ndivs, "NDIV: panels per recursion level (>= 2)"),
        _row([len(c.rfacts)], "how many recursive factorisations"),
        _row(c.rfacts, "recursive factorisation: 0 left, 1 Crout, 2 right"),
        _row([len(c.bcasts)], "how many broadcasts"),
        _row(c.bcasts, "broadcast: 0 1ring, 1 1ringM, 2 2ring, 3 2ringM, 4 long, 5 longM"),
        _row([len(c.depths)], "how many look-ahead depths"),
        _row(c.depths, "look-ahead depth (>= 0)"),
        _row([c.swap], "row swaps: 0 binary exchange, 1 spread-roll, 2 mix"),
        _row([c.swap_threshold], "mix: binary exchange below this many columns"),
        _row([c.l1_form], "L1 storage: 0 transposed, 1 not"),
        _row([c.u_form], "U storage: 0 transposed, 1 not"),
        _row([c.equilibration], "equilibration: 0 no, 1 yes"),
        _row([c.alignment], "memory alignment in doubles (> 0)"),
    ]
    return "\n".join(lines) + "\n"
