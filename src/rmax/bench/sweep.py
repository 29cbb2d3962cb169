"""What the size-sweep families (cpurate, memlat, memcopy) share: a sweep from --min-size to
--max-size within a time budget, refused before it runs when the sizes are reversed or do
not fit in memory, the same tail of the kernel's argv, the same watchdog, and how the
sweep ended."""

from __future__ import annotations

from dataclasses import dataclass

from rmax.bench.family import Family
from rmax.bench.node_kernel import check_fits
from rmax.errors import RmaxError
from rmax.native import executable


@dataclass
class SizeSweep:
    """How a sweep over working-set sizes ended (the kernel's closing record): sizes measured of
    those planned, the largest, what stopped it (the size list or the budget), its seconds."""

    sizes_measured: int | None = None
    sizes_planned: int | None = None
    max_size: int | None = None
    stopped_by: str | None = None
    seconds: float | None = None
    huge_pages: str | None = None       # memlat: whether the chain sat on huge pages

    @classmethod
    def of(cls, record: dict) -> "SizeSweep":
        return cls(**{k: record.get(k) for k in cls.__dataclass_fields__})


class SweepFamily(Family):
    """A family whose options have budget, points_per_octave, min_size and max_size."""

    fits_what = "--max-size"   # how the memory check names the buffers of the largest size

    def copies(self, o) -> int:
        """How many buffers of --max-size the kernel holds at once."""
        return 1

    def check(self, o, ctx):
        if o.max_size:
            check_fits(self.fits_what, o.max_size, self.copies(o))
        if o.min_size and o.max_size and o.min_size > o.max_size:
            raise RmaxError(f"--min-size ({o.min_size} bytes) is larger than --max-size ({o.max_size} bytes)")

    def sweep_argv(self, o, *own: str) -> list[str]:
        """rmax-node NAME with the sweep's options, then the family's own."""
        a = [executable("rmax-node"), self.name, "--json", "-", "--budget", str(o.budget), "--points-per-octave",
             str(o.points_per_octave), *own]
        for opt, v in (("--min-size", o.min_size), ("--max-size", o.max_size)):
            if v:
                a += [opt, str(v)]
        return a

    def timeout(self, o):
        return 3 * o.budget + 60    # the sweep can overrun its budget by one size plus the allocation
