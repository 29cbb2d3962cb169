"""rmax's own engine, rmax-hpl (native/hpl): HPL-format text plus JSON lines with phase times."""

from __future__ import annotations

import json
from pathlib import Path

from rmax.hpl.dat import HplConfig, render
from rmax.hpl.engines.base import Engine, EngineRun, register
from rmax.hpl.output import parse_output
from rmax.native import executable


@register
class RmaxHpl(Engine):
    name = "rmax"
    summary = "rmax-hpl, rmax's HPL-compatible engine (per-phase times)"

    def program(self, workdir: Path, cfg: HplConfig) -> list[str]:
        cfg = HplConfig.from_dict({**cfg.to_dict(), "device": 6})
        (workdir / "HPL.dat").write_text(render(cfg))
        return [executable("rmax-hpl"), str(workdir / "HPL.dat"), "--json", str(workdir / "results.jsonl")]

    def collect(self, workdir: Path, stdout: str) -> EngineRun:
        results = parse_output(stdout)
        extras: list[dict] = []
        path = workdir / "results.jsonl"
        if path.exists():
            records = [json.loads(l) for l in path.read_text().splitlines() if l.strip().startswith("{")]
            # Tests that ran have a result line each; skipped ones appear only in the JSON.
            ran = [r for r in records if r.get("status") != "SKIPPED"]
            if len(ran) == len(results):
                extras = ran
        return EngineRun(results, extras, stdout)
