"""rmax's own engine, rmax-hpl (native/hpl): its JSON input, and its JSON lines (one per test of
the input, skipped ones included) as the source of every stored figure."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

from rmax.hpl.result import HplTest, Phase
from rmax.hpl.dat import BCAST_NAMES, PFACTS, HplConfig
from rmax.hpl.engines.base import Engine, EngineRun, register
from rmax.hpl.progress import Progress, Tracker
from rmax.native import executable


def _phases(d: dict | None) -> dict[str, Phase] | None:
    return {name: Phase(v["max"], v["min"]) for name, v in d.items()} if d else None


def test_of(r: dict) -> HplTest:
    """One rmax-hpl JSON record (schema rmax.hpl/1) as a test; its names back to HPL.dat's numbers."""
    p = r["params"]
    return HplTest(r["variant"], p["N"], p["NB"], p["P"], p["Q"], ("row", "column").index(p["PMAP"]), p["DEPTH"],
                   BCAST_NAMES.index(p["BCAST"]), PFACTS.index(p["RFACT"][0]), p["NDIV"], PFACTS.index(p["PFACT"][0]),
                   p["NBMIN"], r["time_s"], r["gflops"], r.get("residual"),
                   r["status"] if r.get("residual") is not None else "not checked",
                   _phases(r.get("phases_s")), _phases(r.get("wait_s")), _phases(r.get("compute_s")))


@register
class RmaxHpl(Engine):
    name = "rmax"
    summary = "rmax-hpl, rmax's HPL-compatible engine (per-phase times)"

    def __init__(self, arg: str | None = None):
        super().__init__(arg)
        self.tracker: Tracker | None = None

    def program(self, workdir: Path, cfg: HplConfig) -> list[str]:
        # device 6: the HPL-format text on stdout, for the user to watch; the JSON lines to a file;
        # --progress: a line per panel on rank 0's stderr, which every launcher forwards as it comes.
        (workdir / "input.json").write_text(json.dumps({**cfg.to_input(), "device_out": 6}))
        return [executable("rmax-hpl"), str(workdir / "input.json"), "--json", str(workdir / "results.jsonl"),
                "--progress"]

    def progress(self, cfg: HplConfig, on_progress: Callable[[Progress], None] | None) -> Callable[[str], bool]:
        self.tracker = Tracker(cfg.test_count, on_progress)
        return self.tracker.feed

    def collect(self, workdir: Path, stdout: str, cfg: HplConfig) -> EngineRun:
        path = workdir / "results.jsonl"
        lines = path.read_text().splitlines() if path.exists() else []
        records = [json.loads(line) for line in lines if line.strip().startswith("{")]
        records = [r for r in records if r.get("schema") == "rmax.hpl/1"]
        tests = []
        for number, r in enumerate(records, 1):   # the records come in the input's order, skipped ones too
            if r.get("status") != "SKIPPED":
                tests.append(test_of(r))
                tests[-1].trajectory = self.tracker.trajectory(number) if self.tracker else None
        error = None
        if len(records) != cfg.test_count:
            error = f"rmax-hpl reported {len(records)} of the {cfg.test_count} tests of its input"
        return EngineRun(tests, stdout, None, error)
