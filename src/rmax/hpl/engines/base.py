"""The engine interface: write the input an HPL binary wants into a work
folder, give the program's argv, and read its results back."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from rmax.errors import RmaxError
from rmax.hpl.dat import HplConfig
from rmax.hpl.output import HplResult


@dataclass
class EngineRun:
    """What an engine made of one execution."""

    results: list[HplResult]
    extras: list[dict] = field(default_factory=list)   # per result, engine-specific (phases, bytes)
    text: str = ""                                        # the HPL-format text, for the record
    info: dict = field(default_factory=dict)              # engine-wide facts (hpcc's summary block)


class Engine(ABC):
    name: ClassVar[str]
    summary: ClassVar[str]

    def __init__(self, arg: str | None = None):
        self.arg = arg

    @abstractmethod
    def program(self, workdir: Path, cfg: HplConfig) -> list[str]:
        """Write the input files into workdir and return the argv (without the launcher)."""

    @abstractmethod
    def collect(self, workdir: Path, stdout: str) -> EngineRun:
        """Read the results after the job ended."""

    @property
    def label(self) -> str:
        return self.name if not self.arg else f"{self.name}:{self.arg}"


ENGINES: dict[str, type[Engine]] = {}


def register(cls: type[Engine]) -> type[Engine]:
    ENGINES[cls.name] = cls
    return cls


def get_engine(spec: str) -> Engine:
    """'rmax', 'hpcc' or 'xhpl:/path/to/xhpl'."""
    name, _, arg = spec.partition(":")
    if name not in ENGINES:
        raise RmaxError(f"unknown HPL engine '{spec}'", hint=f"one of: {', '.join(sorted(ENGINES))} (xhpl:PATH)")
    return ENGINES[name](arg or None)
