"""What the HPC Challenge families share (gups, ptrans, fft: `rmax-hpcc`, native/hpcc): the
kernel's records, one point per form HPCC defines (single: one rank alone; star: every rank
alone, all at once, the mean over ranks; mpi: all ranks on one problem), each checked by the
kernel as HPCC checks it; their typed summary, figures, table and plot. The figures take
their names, units and statistics from hpcc's own (rmax.hpl.hpcc_kernels), so that rmax's
and hpcc's numbers read alike."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from rmax.bench.family import Family, Summary, option
from rmax.bench.netlaunch import header_summary, split_records, parsed_records
from rmax.bench.runner import Parsed
from rmax.bench.view import Figure, Plot, Table, View, figure
from rmax.errors import RmaxError
from rmax.hpl.hpcc_kernels import BY_KEY
from rmax.native import executable
from rmax.params import Names
from rmax.units import FROM_BASE

FORMS = ("single", "star", "mpi")
FORMS_TYPE = Names(FORMS, "form")


@dataclass
class HpccPoint:
    form: str                     # single, star or mpi
    ranks: int                    # the ranks it ran on
    size: int                     # table words, matrix order or transform points
    value: float | None           # updates/s, bytes/s or flop/s (star: the mean over ranks)
    seconds: float                # the timed part (star: the slowest rank's)
    validated: bool               # HPCC's check passed
    check: float | None = None    # the check's measure (the family's CHECK)
    value_min: float | None = None   # star: the slowest rank's value
    value_max: float | None = None   # star: the fastest rank's
    repeats: list[float] = field(default_factory=list)   # ptrans: every placement's value
    rank: int | None = None       # single: the rank that ran it


@dataclass
class HpccSummary(Summary):
    points: list[HpccPoint]
    ranks: int = 0
    hosts: list[str] = field(default_factory=list)
    mpi_library: str | None = None

    def point(self, form: str) -> HpccPoint | None:
        return next((p for p in self.points if p.form == form), None)


def forms_option(mpi: str):
    """The --forms option of a kernel in all three forms; `mpi` says what the MPI form's one problem is."""
    return option(FORMS, f"Forms: single (one rank alone), star (every rank alone, at once), mpi ({mpi}).",
                  type=FORMS_TYPE)


def require_pow2(value: int, what: str) -> None:
    if value & (value - 1):
        raise RmaxError(f"{what}: {value} is not a power of two",
                        hint=f"use {1 << (value.bit_length() - 1)} or {1 << value.bit_length()}")


class HpccFamily(Family):
    """The base of the HPC Challenge families: one rmax-hpcc sub-command, one point per form."""

    scope = "net"
    BASE: ClassVar[str]                    # the records' unit (bytes/s, flop/s, updates/s): rmax.units.FROM_BASE
    CHECK: ClassVar[tuple[str, str]]       # the check's record field and what it is, for people
    KERNELS: ClassVar[dict[str, str]]      # form -> the key of hpcc's summary that reports it
    SIZE: ClassVar[str]                    # what a point's size counts

    @property
    def SCALE(self) -> float:
        return FROM_BASE[self.BASE][0]

    @property
    def UNIT(self) -> str:
        """The figures' unit: the one its quantity is shown in (GUP/s, MB/s, GFLOPS)."""
        return FROM_BASE[self.BASE][1]

    def forms_argv(self, o) -> list[str]:
        return ["--forms", ",".join(f for f in FORMS if f in o.forms)]

    def kernel_argv(self, o) -> list[str]:
        """The sub-command's own options."""
        raise NotImplementedError

    def argv(self, o):
        a = [executable("rmax-hpcc"), self.name, "--json", "-", *self.kernel_argv(o)]
        return a + (["--self-test-corrupt"] if o.self_test_corrupt else [])

    def parse(self, records: list[dict]) -> Parsed:
        header, recs, done = split_records(records, self.Summary.SCHEMA)
        points = [HpccPoint(r["form"], r["ranks"], r["size"], r.get("value"), r["seconds"], bool(r["validated"]),
                            r.get(self.CHECK[0]), r.get("value_min"), r.get("value_max"), list(r.get("repeats", [])),
                            r.get("rank")) for r in recs]
        points.sort(key=lambda p: FORMS.index(p.form))   # shown in one order, whichever order the kernel ran them
        summary = self.Summary(points, (header or {}).get("ranks", 0), **header_summary(header))
        samples = {p.form: p.repeats or ([p.value] if p.value is not None else []) for p in points}
        bad = [p.form for p in points if not p.validated]
        return parsed_records(summary, samples, bad, done, f"{self.name}: HPCC's check failed ({self.CHECK[1]}) in form",
                       f"rmax-hpcc {self.name} stopped before its last form")

    def statistic(self, p: HpccPoint) -> str:
        return BY_KEY[self.KERNELS[p.form]].statistic

    def _figure(self, s: HpccSummary, i: int, p: HpccPoint) -> Figure | None:
        k = BY_KEY[self.KERNELS[p.form]]
        return figure(s, ("points", i, "value"), p.form, k.title, self.UNIT, self.statistic(p), scale=self.SCALE,
                      repeats=("points", i, "repeats") if p.repeats else None,
                      at=f"{p.size} {self.SIZE}, {p.ranks} rank{'s' if p.ranks != 1 else ''}")

    def metrics(self, s: HpccSummary) -> list[Figure]:
        out = [self._figure(s, i, p) for i, p in enumerate(s.points) if p.validated]
        return [f for f in out if f]

    def headline(self, s: HpccSummary) -> list[Figure]:
        return self.metrics(s)

    def view(self, s: HpccSummary) -> View:
        rows = []
        for p in s.points:
            shown = "—" if p.value is None else f"{p.value * self.SCALE:.6g}"
            spread = (f"{p.value_min * self.SCALE:.4g}-{p.value_max * self.SCALE:.4g}"
                      if p.value_min is not None and p.value_max is not None else "—")
            rows.append([p.form, str(p.ranks), f"{p.size:,}", shown, spread,
                         "—" if p.check is None else f"{p.check:.3g}", "passed" if p.validated else "FAILED"])
        t = Table(["Form", "Ranks", self.SIZE.capitalize(), self.UNIT, f"Ranks' range ({self.UNIT})", self.CHECK[1],
                   "Check"], rows, f"{self.title}; hosts: {', '.join(sorted(set(s.hosts))) or '—'}", left=1)
        notes = ["single: one rank alone while the others wait; star: every rank alone, all at once, the mean over "
                 "ranks; mpi: all ranks on one problem (HPCC's forms)."]
        if any(not p.validated for p in s.points):
            notes.append(f"A form FAILED HPCC's check ({self.CHECK[1]}): its number is not a result.")
        data = [{"form": p.form, "ranks": p.ranks, "size": p.size, "value": p.value, "seconds": p.seconds,
                 "check": p.check, "validated": p.validated} for p in s.points]
        return View([t], notes, {self.name: data})

    def plots(self, runs) -> list[Plot]:
        labels, values = [], []
        for label, s in runs:
            for p in s.points:
                if p.validated and p.value is not None:
                    labels.append(f"{label} {p.form}")
                    values.append(p.value * self.SCALE)
        return [Plot("bar", self.title, ylabel=self.UNIT, labels=labels, values=values)] if labels else []
