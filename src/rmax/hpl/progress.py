"""rmax-hpl's progress as it runs: its `--progress` lines on stderr read into one trajectory per
test (fraction of the work, elapsed seconds, running GFLOPS), and the events a display shows."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

# native/hpl/lu.c: "rmax-hpl: test T: column C of N (F% of the work) G GFLOPS after S s", rank 0 only.
LINE = re.compile(r"^rmax-hpl: test (?P<test>\d+): column (?P<col>\d+) of (?P<n>\d+) \([\d.]+% of the work\) "
                  r"(?P<gflops>[\d.]+) GFLOPS after (?P<elapsed>[\d.]+) s$")
MAX_POINTS = 200     # a stored trajectory keeps at most this many points


@dataclass
class Trajectory:
    """One test's running rate, panel by panel: parallel lists, in order."""

    fraction: list[float] = field(default_factory=list)   # of the LU's flops done, 0..1
    elapsed_s: list[float] = field(default_factory=list)  # since the factorisation started
    gflops: list[float] = field(default_factory=list)     # running rate: flops so far / elapsed

    def add(self, fraction: float, elapsed_s: float, gflops: float) -> None:
        self.fraction.append(fraction)
        self.elapsed_s.append(elapsed_s)
        self.gflops.append(gflops)

    def thinned(self, limit: int = MAX_POINTS) -> "Trajectory":
        """At most `limit` points, evenly spread over the panels; the first and the last kept."""
        n = len(self.fraction)
        if n <= limit:
            return self
        keep = sorted({round(i * (n - 1) / (limit - 1)) for i in range(limit)})
        return Trajectory([self.fraction[i] for i in keep], [self.elapsed_s[i] for i in keep],
                          [self.gflops[i] for i in keep])


@dataclass(frozen=True)
class Progress:
    """One progress line, as a display shows it: test `test` of `tests` (1-based, the input's order)."""

    test: int
    tests: int
    n: int
    fraction: float
    elapsed_s: float
    gflops: float

    def short(self) -> str:
        """The compact form a survey's step line shows: "hpl: 45% 80.1 GFLOPS"."""
        tests = f" test {self.test}/{self.tests}" if self.tests > 1 else ""
        return f"hpl{tests}: {100 * self.fraction:.0f}% {self.gflops:.1f} GFLOPS (running rate)"


def fraction_done(col: int, n: int) -> float:
    """The share of the LU's 2/3 N^3 flops done once `col` columns are factored: 1 - ((N-col)/N)^3."""
    return 1.0 - ((n - col) / n) ** 3 if n > 0 else 1.0


class Tracker:
    """Reads stderr lines; keeps each test's trajectory and tells on_progress of every point.
    feed() says whether a line was a progress line (then it is no failure's cause)."""

    def __init__(self, tests: int, on_progress: Callable[[Progress], None] | None = None):
        self.tests = tests
        self.on_progress = on_progress
        self.trajectories: dict[int, Trajectory] = {}

    def feed(self, line: str) -> bool:
        m = LINE.match(line.strip())
        if not m:
            return False
        test, col, n = int(m["test"]), int(m["col"]), int(m["n"])
        p = Progress(test, self.tests, n, fraction_done(col, n), float(m["elapsed"]), float(m["gflops"]))
        self.trajectories.setdefault(test, Trajectory()).add(p.fraction, p.elapsed_s, p.gflops)
        if self.on_progress:
            self.on_progress(p)
        return True

    def trajectory(self, test: int) -> Trajectory | None:
        got = self.trajectories.get(test)
        return got.thinned() if got else None
