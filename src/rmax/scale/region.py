"""A program's own timed region: what `rmax scale` times instead of the launch when the program says.

A program may print, on its standard output, a line

    rmax-region-seconds: 1.234

the seconds it spent in the part it wants scaled (a decimal or exponent number, >= 0), written
whole, in one write. Print it from one rank: the launcher forwards each rank's output in pieces
(Open MPI's ranks write to terminals), so lines of ranks that print at once can interleave. An
MPI program times its region between two barriers on rank 0, or reduces the ranks' times with a
max there. If several lines come, the largest is the point's time (the job ends with its slowest
rank). The launcher's start-up, MPI's wire-up and the teardown are outside it, so no empty launch
is timed or subtracted. A malformed line fails the point, naming it: a misread time would be a
wrong fit."""

from __future__ import annotations

import math

from rmax.errors import RunFailed

MARKER = "rmax-region-seconds:"


def region_seconds(stdout: str) -> float | None:
    """The slowest rank's region in a job's standard output, or None when no rank printed one."""
    values = []
    for line in stdout.splitlines():
        line = line.strip()
        if not line.startswith(MARKER):
            continue
        text = line[len(MARKER):].strip()
        try:
            v = float(text)
        except ValueError:
            v = math.nan
        if not math.isfinite(v) or v < 0:
            raise RunFailed(f"the program printed '{MARKER} {text[:40]}': not a number of seconds >= 0 (lines "
                            "printed by several ranks at once can interleave: print it from one rank)")
        values.append(v)
    return max(values) if values else None
