"""Open MPI's mpirun: the default launcher; it runs the openmpi build of rmax's MPI executables (or a
site build of Open MPI, with the site's own mpirun)."""

from __future__ import annotations

import os

from rmax.errors import RmaxError
from rmax.launch.base import LaunchSpec, Launcher, register
from rmax.launch.hosts import host_argument
from rmax.launch.netscope import JobNetwork


@register
class OpenMpiRun(Launcher):
    name = "mpirun"
    command = "mpirun"
    package = "openmpi-bin"
    summary = "Open MPI's mpirun (default outside Slurm)"
    mpi = "Open MPI"

    def prefix(self, spec: LaunchSpec) -> list[str]:
        return self.confined(spec, spec.network())

    def confined(self, spec: LaunchSpec, net: JobNetwork) -> list[str]:
        """mpirun's argv with its out-of-band and TCP traffic, and every listener of the
        job (bindaddr preloaded into mpirun, its daemons and the ranks), on `net`."""
        bind_env = net.bind_env()
        argv = ["env", *(f"{k}={v}" for k, v in bind_env.items()), self.path_for(spec, "mpirun"), "-np", str(spec.np)]
        if os.geteuid() == 0:
            argv.append("--allow-run-as-root")
        # Open MPI refuses to bind more ranks than cores, so oversubscribed ranks float.
        crowded = spec.oversubscribe and spec.np * spec.blas_threads > spec.slots
        if spec.oversubscribe:
            argv.append("--oversubscribe")
        if spec.hostfile_as_is():
            argv += ["--hostfile", spec.hostfile]
        elif spec.hosts:
            argv += ["--host", host_argument(spec.hosts)]
        # A rank with several BLAS threads needs that many cores bound to it (PE=n).
        mapping = f"ppr:{spec.ranks_per_node}:node" if spec.ranks_per_node else None
        if spec.bind == "core" and spec.blas_threads > 1 and not crowded:
            mapping = f"{mapping or 'slot'}:PE={spec.blas_threads}"
        if mapping:
            argv += ["--map-by", mapping]
        argv += ["--bind-to", "none" if crowded else spec.bind]
        for k, v in spec.rank_env().items():
            argv += ["-x", f"{k}={v}"]
        argv += [a for k in bind_env for a in ("-x", k)]   # ranks on other hosts: started by orted, not by us
        if not net.single_host:
            # The daemons on other hosts are started by ssh, which does not pass our environment:
            # ORTE runs its launch agent ("orted", split at spaces) there, so the variables go in it.
            if any(c.isspace() for v in bind_env.values() for c in v):
                raise RmaxError("rmax's install path has a space: Open MPI's remote daemons cannot be confined "
                                "to the job's network", hint="install rmax under a path without spaces")
            argv += ["--mca", "orte_launch_agent", " ".join(["env", *(f"{k}={v}" for k, v in bind_env.items()),
                                                            "orted"])]
        # Loopback is excluded from Open MPI's TCP BTL by default; one host must name it.
        argv += ["--mca", "oob_tcp_if_include", net.cidr, "--mca", "btl_tcp_if_include", net.cidr]
        return argv
