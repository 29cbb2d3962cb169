"""No launcher: one process on this host, for kernels that are not MPI programs."""

from __future__ import annotations

import sys

from rmax.errors import RmaxError
from rmax.launch.base import LaunchSpec, Launcher, register


@register
class Local(Launcher):
    name = "local"
    command = sys.executable  # always present
    package = "python3"
    summary = "run one process directly on this host (no MPI)"

    def path(self) -> str:
        return ""

    def available(self) -> bool:
        return True

    def prefix(self, spec: LaunchSpec) -> list[str]:
        if spec.np != 1 or spec.hosts:
            raise RmaxError("the local launcher runs exactly one process on this host",
                            hint="use --launcher mpirun for more ranks or other hosts")
        return []
