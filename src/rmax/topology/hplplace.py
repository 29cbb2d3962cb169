"""`rmax hpl run --placement topology`: a rankfile that keeps HPL's heavier grid lines
(process rows or columns) inside switches."""

from __future__ import annotations

import os
import tempfile
from contextlib import contextmanager
from pathlib import Path

from rmax.errors import RmaxError
from rmax.launch import LaunchSpec, local_slots, read_hostfile
from rmax.topology.placement import (heavier_dimension, hpl_placement, natural_placement, rankfile_text,
                                     split_columns)
from rmax.topology.sources import groups_for

RANKFILE_LAUNCHERS = ("mpirun", "vcluster")   # Open MPI reads rankfiles; srun and MPICH do not


@contextmanager
def hpl_rankfile(cfg, spec: LaunchSpec, launcher: str | None, topology_file: str | None, keep: str = "auto"):
    """Add `--rankfile` for cfg's largest grid to spec for the duration of the run; yields a description.
    keep: rows, columns, or auto (the heavier dimension by HPL's model, see placement.heavier_dimension)."""
    name = launcher or ("srun" if os.environ.get("SLURM_JOB_ID") else "mpirun")
    if name not in RANKFILE_LAUNCHERS:
        raise RmaxError(f"--placement topology works with the {' and '.join(RANKFILE_LAUNCHERS)} launchers, "
                        f"not {name}", hint="with srun, order the nodes with --nodelist and --distribution")
    cpus, cluster = None, None
    if name == "vcluster":
        from rmax.vcluster.state import LAUNCH_HOW, find

        st = find(None, LAUNCH_HOW)
        cluster = st.name
        if not spec.hosts:
            spec.hostfile, spec.hosts = str(st.hostfile), read_hostfile(st.hostfile)
        cpus = f"0-{local_slots() - 1}"   # virtual nodes share this machine's cores: do not pin
    if not spec.hosts:
        raise RmaxError("--placement topology needs the nodes to place ranks on", hint="give --hosts or --hostfile")
    groups, source = groups_for(topology_file, name, vcluster=cluster)
    named = {n for g in groups for n in g}
    unknown = [h.name for h in spec.hosts if h.name not in named]
    if unknown:   # placing by switches that do not hold the job's hosts would be a guess
        raise RmaxError(f"the switch groups from {source} do not name host {', '.join(unknown)}",
                        hint="list every host of the job under a [[switch]] (or run rmax topology infer again)")
    p, q = max(cfg.grids, key=lambda g: g[0] * g[1])
    placed = hpl_placement(groups, spec.hosts, p, q, cfg.pmap, keep)
    natural = natural_placement(groups, spec.hosts, p, q, cfg.pmap)
    kept = heavier_dimension(p, q) if keep == "auto" else keep
    natural_split = natural.split_rows if kept == "rows" else split_columns(natural, p, q, cfg.pmap)
    fd, path = tempfile.mkstemp(prefix="rmax-rankfile-", suffix=".txt")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(rankfile_text(placed.ranks, cpus))
        spec.extra_args += ["--rankfile", path]
        # Recorded with the run (its environment), so a report can tell the placements apart.
        spec.env["RMAX_PLACEMENT"] = f"topology:{p}x{q}:{placed.note}"
        spec.env["RMAX_PLACEMENT_HOSTS"] = ",".join(s.host for s in placed.ranks)   # rank r runs on the r-th
        yield (f"placement: {placed.note} for the {p} x {q} grid, switches from {source} "
               f"(hostfile order would split {natural_split} process {kept})")
    finally:
        Path(path).unlink(missing_ok=True)
