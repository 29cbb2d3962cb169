"""HPL.dat: the 31-line input format of HPL 2.3 (its HPL_pdinfo reads it) as values
(HplConfig), written by render() and read by rmax-hpl. rmax has no parser of
its own: `rmax-hpl --check` (native/hpl/input.c) is the one grammar, asked
before any run is stored, so rmax and rmax-hpl cannot read a file differently."""

from __future__ import annotations

import json
import math
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path

from rmax.errors import RmaxError
from rmax.native import executable

PFACTS = "LCR"  # left, Crout, right: digits 0, 1, 2
BCAST_NAMES = ("1ring", "1ringM", "2ring", "2ringM", "long", "longM")
CHECK_TIMEOUT_S = 60
CHECK_HINT = "`rmax-hpl --check FILE` shows how an HPL input is read; the grammar is in native/hpl/README.md"


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

    @property
    def test_count(self) -> int:
        return math.prod(len(v) for v in (self.grids, self.ns, self.nbs, self.depths, self.bcasts, self.rfacts,
                                          self.pfacts, self.nbmins, self.ndivs))

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

    def variant_code(self, t: dict) -> str:
        """HPL's result code, e.g. WR11C2R4."""
        return (f"W{'RC'[self.pmap]}{t['depth']}{t['bcast']}{PFACTS[t['rfact']]}{t['ndiv']}"
                f"{PFACTS[t['pfact']]}{t['nbmin']}")

    def to_dict(self) -> dict:
        d = asdict(self)
        d["grids"] = [list(g) for g in self.grids]
        return d

    def to_input(self) -> dict:
        """rmax-hpl's JSON input for these values (the keys its --check prints)."""
        d = asdict(self)
        return {**{k: d[f] for k, f in _CHECK_FIELDS.items()}, "P": [p for p, _ in self.grids],
                "Q": [q for _, q in self.grids]}

    @classmethod
    def from_dict(cls, d: dict) -> "HplConfig":
        known = set(cls.__dataclass_fields__)
        unknown = set(d) - known
        if unknown:
            raise RmaxError(f"unknown HPL field(s): {', '.join(sorted(unknown))}", hint=f"known: {', '.join(sorted(known))}")
        d = dict(d)
        if "grids" in d:
            d["grids"] = [tuple(g) for g in d["grids"]]
        return cls(**d)


# rmax-hpl's JSON keys (its JSON input and --check's output) -> HplConfig fields.
_CHECK_FIELDS = {"output_file": "output_file", "device_out": "device", "N": "ns", "NB": "nbs", "PMAP": "pmap",
                 "threshold": "threshold", "PFACT": "pfacts", "NBMIN": "nbmins", "NDIV": "ndivs", "RFACT": "rfacts",
                 "BCAST": "bcasts", "DEPTH": "depths", "SWAP": "swap", "swap_threshold": "swap_threshold",
                 "L1": "l1_form", "U": "u_form", "equilibration": "equilibration", "alignment": "alignment"}


def _ask(args: list[str], text: str | None = None, hint: str | None = None) -> HplConfig:
    """rmax-hpl's verdict on an input: the parsed values, or its one-line error as an RmaxError."""
    argv = [executable("rmax-hpl"), "--check", *args]
    data = text.encode("utf-8", "surrogateescape") if text is not None else None
    try:
        proc = subprocess.run(argv, input=data, capture_output=True, timeout=CHECK_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise RmaxError(f"rmax-hpl --check gave no answer in {CHECK_TIMEOUT_S} s", exit_code=1) from None
    except OSError as e:
        raise RmaxError(f"cannot run rmax-hpl: {e.strerror}", hint="run 'make install' to build it",
                        exit_code=1) from None
    if proc.returncode == 0:
        d = json.loads(proc.stdout)
        cfg = HplConfig(**{f: d[k] for k, f in _CHECK_FIELDS.items()}, grids=list(zip(d["P"], d["Q"])))
        cfg.threshold = float(cfg.threshold)
        return cfg
    lines = proc.stderr.decode("utf-8", "replace").splitlines()
    prefix = "rmax-hpl: error: "
    message = next((l[len(prefix):] for l in lines if l.startswith(prefix)), None)
    if proc.returncode == 2 and message:
        raise RmaxError(message, hint=hint)
    raise RmaxError(f"rmax-hpl --check failed (exit status {proc.returncode}): "
                    f"{lines[-1] if lines else 'no message'}", exit_code=1)


def read(path: str | Path, ranks: int | None = None) -> HplConfig:
    """The HPL.dat (or rmax-hpl JSON input) at path as rmax-hpl reads it, refused as rmax-hpl
    refuses it (its grids against `ranks` when given, its memory for one rank per node). A path
    that is no regular file (a FIFO, a device, a folder) is refused here: rmax-hpl would block on it."""
    from rmax.textfile import check_input

    check_input(path, "HPL.dat")
    return _ask([str(path)] + (["--ranks", str(ranks)] if ranks and ranks > 0 else []), hint=CHECK_HINT)


def checked(cfg: HplConfig, ranks: int | None = None, node_ranks: int = 1) -> HplConfig:
    """cfg as rmax-hpl reads it (clamped as the reference clamps), or refused with
    rmax-hpl's message: an illegal value, a grid larger than `ranks` (when given), or a test
    that does not fit in this node's memory with node_ranks ranks sharing it."""
    args = ["-", "--node-ranks", str(node_ranks)] + (["--ranks", str(ranks)] if ranks else [])
    return _ask(args, json.dumps(cfg.to_input()))


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
