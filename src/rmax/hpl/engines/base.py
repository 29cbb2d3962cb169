"""The engine interface: write the input an HPL binary wants into a work
folder, give the program's argv, and read its results back."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, ClassVar

from rmax.hpl.result import HplTest
from rmax.errors import RmaxError
from rmax.hpl.dat import HplConfig
from rmax.hpl.progress import Progress
from rmax.registry import Registry


@dataclass
class EngineRun:
    """What an engine made of one execution: its tests, the HPL text for the record, hpcc's
    summary block, and an error when what it reported does not match what its input asked for."""

    tests: list[HplTest]
    text: str = ""
    hpcc_summary: dict[str, str] | None = None
    error: str | None = None


class Engine(ABC):
    name: ClassVar[str]
    summary: ClassVar[str]

    def __init__(self, arg: str | None = None):
        self.arg = arg

    @abstractmethod
    def program(self, workdir: Path, cfg: HplConfig) -> list[str]:
        """Write the input files into workdir and return the argv (without the launcher)."""

    @abstractmethod
    def collect(self, workdir: Path, stdout: str, cfg: HplConfig) -> EngineRun:
        """Read the results of cfg's tests after the job ended."""

    def allowance(self, cfg: HplConfig, ranks: int, hpl_seconds: float) -> tuple[float, str] | None:
        """Seconds the watchdog allows beyond `hpl_seconds` for what the engine runs besides HPL,
        and what for (said when the timeout expires); None: HPL is all it runs."""
        return None

    def progress(self, cfg: HplConfig, on_progress: Callable[[Progress], None] | None) -> Callable[[str], bool] | None:
        """A reader of the job's stderr lines for an engine that reports progress (see run_job's
        on_stderr); None: the engine says nothing while it runs."""
        return None

    @property
    def label(self) -> str:
        return self.name if not self.arg else f"{self.name}:{self.arg}"


ENGINES: Registry = Registry("HPL engines")    # name -> Engine class
register = ENGINES.register


def get_engine(spec: str) -> Engine:
    """'rmax', 'hpcc' or 'xhpl:/path/to/xhpl'."""
    name, _, arg = spec.partition(":")
    if name not in ENGINES:
        raise RmaxError(f"unknown HPL engine '{spec}'", hint=f"one of: {', '.join(sorted(ENGINES))} (xhpl:PATH)")
    return ENGINES[name](arg or None)
