"""A user's own xhpl build (xhpl:PATH): tune or measure the very binary a site submits."""

from __future__ import annotations

import os
from pathlib import Path

from rmax.errors import RmaxError
from rmax.hpl.dat import HplConfig, render
from rmax.hpl.engines.base import Engine, EngineRun, register
from rmax.hpl.output import parse_tests


@register
class Xhpl(Engine):
    name = "xhpl"
    summary = "the reference HPL's xhpl at a given path (xhpl:PATH)"

    def _path(self) -> str:
        if not self.arg:
            raise RmaxError("the xhpl engine needs the binary's path", hint="--engine xhpl:/path/to/xhpl")
        path = Path(self.arg).expanduser().resolve()
        if not path.is_file() or not os.access(path, os.X_OK):
            raise RmaxError(f"xhpl engine: {path} is not an executable file")
        return str(path)

    def program(self, workdir: Path, cfg: HplConfig) -> list[str]:
        binary = self._path()
        # xhpl reads HPL.dat from its working directory; results to a file we read back.
        cfg = HplConfig.from_dict({**cfg.to_dict(), "device": 8, "output_file": "HPL.out"})
        (workdir / "HPL.dat").write_text(render(cfg))
        return [binary]

    def collect(self, workdir: Path, stdout: str, cfg: HplConfig) -> EngineRun:
        out = workdir / "HPL.out"
        text = out.read_text() if out.exists() else stdout
        return EngineRun(parse_tests(text), text)
