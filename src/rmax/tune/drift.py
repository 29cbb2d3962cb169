"""Has the machine changed? The incumbent is measured again in every block of pairs
(rmax.tune.noise), so its own rate, block after block, is a probe of the machine: a shared
node's load, a busy core, a throttled clock all move it. Its level is the median of its runs in
its last undisturbed block; how far its runs stray from that level between blocks is the noise
a run has; a run further from the level than TOLERANCE_SDS of those strays (or than the
starting band while too few are measured), followed by another outside it, means the machine
changed, and nothing measured since the last run within the band may decide anything; one run
outside it followed by one within is a one-off (rmax.tune.noise)."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

from rmax.stats import robust_sd
from rmax.tune.space import key

START_BAND = 0.20        # relative band before MIN_STRAYS strays are measured
MIN_BAND = 0.04          # never narrower: two percent-level jitters must not read as a change
TOLERANCE_SDS = 3.5      # robust SDs of the strays between blocks
MIN_STRAYS = 6


@dataclass
class Change:
    """One time the machine changed, as the session tells it."""

    at: float                  # wall time (epoch) of the run that showed it
    trial: int                 # that run's trial number
    gflops: float
    level: float               # the incumbent's level before, GFLOPS
    band: float                # the relative band its runs stayed within
    settled: str = ""          # how it ended: back at its level, a new level, or the band widened
    retried: list = field(default_factory=list)   # what was set aside and measured again

    @property
    def change(self) -> float:
        return self.gflops / self.level - 1

    def text(self) -> str:
        when = time.strftime("%H:%M:%S", time.localtime(self.at))
        return (f"the machine changed at {when} (trial {self.trial}): the incumbent ran at {self.gflops:.3f} GFLOPS, "
                f"{100 * self.change:+.0f}% from its level {self.level:.3f} (its runs stay within "
                f"±{100 * self.band:.0f}% between blocks)")

    def to_dict(self) -> dict:
        return {"at": self.at, "trial": self.trial, "gflops": self.gflops, "level": self.level, "band": self.band,
                "change_pct": 100 * self.change, "settled": self.settled, "retried": self.retried,
                "text": self.text()}


@dataclass
class Monitor:
    levels: dict = field(default_factory=dict)     # key(candidate) -> log of its level
    strays: list = field(default_factory=list)     # log(run / level) of runs within the band
    widen: float = 1.0                             # doubled each time the machine would not settle
    changes: list = field(default_factory=list)    # Change, in order
    oneoffs: list = field(default_factory=list)    # trials of single runs outside the band, set aside

    def band(self) -> float:
        if len(self.strays) >= MIN_STRAYS:
            base = max(MIN_BAND, TOLERANCE_SDS * robust_sd(self.strays))
        else:
            base = START_BAND
        return base * self.widen

    def level(self, cand: dict) -> float | None:
        lv = self.levels.get(key(cand))
        return math.exp(lv) if lv is not None else None

    def within(self, cand: dict, gflops: float) -> bool:
        """Whether a run of cand is within the band of its level (True while it has none)."""
        lv = self.levels.get(key(cand))
        return lv is None or abs(math.log(gflops) - lv) <= math.log1p(self.band())

    def observe(self, cand: dict, gflops: float) -> bool:
        """One run of the incumbent: within the band (recorded as a stray) or not; the first run
        of a configuration with no level gives it one."""
        k = key(cand)
        if k not in self.levels:
            self.levels[k] = math.log(gflops)
            return True
        if not self.within(cand, gflops):
            return False
        self.strays.append(math.log(gflops) - self.levels[k])
        return True

    def set_level(self, cand: dict, runs: list[float]) -> None:
        """cand's level from its runs of one block (the median: one odd run cannot move it)."""
        logs = sorted(math.log(g) for g in runs if g and g > 0)
        if logs:
            n = len(logs)
            self.levels[key(cand)] = logs[n // 2] if n % 2 else (logs[n // 2 - 1] + logs[n // 2]) / 2

    def noise(self) -> float | None:
        """The relative SD of a run around its level between blocks (None before MIN_STRAYS)."""
        return math.expm1(robust_sd(self.strays)) if len(self.strays) >= MIN_STRAYS else None
