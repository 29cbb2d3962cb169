"""HPC Challenge's HPL section (Debian's hpcc), the reference implementation here.

hpcc reads hpccinf.txt (HPL.dat's 31 lines, a separator, then PTRANS sizes)
from its working directory and appends to hpccoutf.txt; it always runs all of
its tests, so a run takes longer than HPL alone (rmax.hpl.hpcc_kernels: what they report, and the
time the watchdog allows for them)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from rmax.errors import RmaxError
from rmax.hpl import hpcc_kernels
from rmax.hpl.dat import HplConfig, render
from rmax.hpl.engines.base import Engine, EngineRun, register
from rmax.hpl.output import parse_tests

SUMMARY_LINE = re.compile(r"^(\w+)=(\S+)\s*$")


def summary_values(text: str) -> dict[str, str]:
    """The key=value lines of hpcc's summary block (HPL_Tflops, StarSTREAM_Triad, ...)."""
    return {m.group(1): m.group(2) for m in map(SUMMARY_LINE.match, text.splitlines()) if m}


def hpl_section(text: str) -> str:
    """The part of hpccoutf.txt that HPL wrote (between its Begin/End markers when present)."""
    start = text.find("Begin of HPL section")
    end = text.find("End of HPL section")
    return text[start:end] if 0 <= start < end else text


def hpccinf_text(cfg: HplConfig) -> str:
    """hpccinf.txt: HPL.dat's 31 lines, a separator line hpcc skips, then one small PTRANS case."""
    ptrans = ["#" * 8 + " separator line, ignored " + "#" * 8,
              "1            how many PTRANS problem sizes",
              f"{min(cfg.ns) // 2 or 1}         PTRANS sizes",
              "1            how many PTRANS block sizes",
              f"{cfg.nbs[0]}          PTRANS block sizes"]
    return render(cfg) + "\n".join(ptrans) + "\n"


@register
class Hpcc(Engine):
    name = "hpcc"
    summary = "HPC Challenge's HPL (Debian package hpcc), the reference"

    def program(self, workdir: Path, cfg: HplConfig) -> list[str]:
        binary = shutil.which("hpcc")
        if not binary:
            raise RmaxError("hpcc not found: the hpcc engine needs it", hint="apt-get install hpcc")
        (workdir / "hpccinf.txt").write_text(hpccinf_text(cfg))
        return [binary]

    def allowance(self, cfg: HplConfig, ranks: int, hpl_seconds: float) -> tuple[float, str]:
        return hpcc_kernels.allowance(max(cfg.ns), ranks, hpl_seconds), f"hpcc's other kernels ({hpcc_kernels.NAMES})"

    def collect(self, workdir: Path, stdout: str, cfg: HplConfig) -> EngineRun:
        out = workdir / "hpccoutf.txt"
        text = out.read_text() if out.exists() else ""
        section = hpl_section(text)
        return EngineRun(parse_tests(section), section, summary_values(text) if text else None)
