"""Launch layer: launchers by name, host lists, and the watchdog that runs jobs."""

from rmax.launch import local, mpiexec, mpirun, srun  # noqa: F401  (register the launchers)
from rmax.launch import vcluster  # noqa: F401  (the virtual-cluster launcher)
from rmax.launch.base import REGISTRY, THREAD_VARIABLES, LaunchSpec, Launcher, get_launcher, register
from rmax.launch.hosts import Host, check_resolvable, local_slots, parse_hosts, read_hostfile
from rmax.launch.job import JobResult, prepare, run_job

__all__ = ["REGISTRY", "THREAD_VARIABLES", "LaunchSpec", "Launcher", "get_launcher", "register", "Host",
           "check_resolvable", "local_slots", "parse_hosts", "read_hostfile", "JobResult", "prepare", "run_job"]
