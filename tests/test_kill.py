"""kill -9 of rmax mid-run: nothing it launched keeps running, the run is reaped to `interrupted`
on the next open, and its scratch folder is gone."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from killutil import kill_midway, kill_rmax_midway

from rmax.hpl.dat import HplConfig, render
from rmax.store import open_store


def _assert_reaped(db: Path, kind: str) -> None:
    with open_store(db) as s:
        runs = s.list(kind=kind)
    assert len(runs) == 1 and runs[0].status == "interrupted", [(r.kind, r.status) for r in runs]


def test_kill_during_stream_leaves_nothing(db, tmp_path):
    tree, left = kill_rmax_midway(["bench", "stream", "--mode", "one", "--size", "64MiB", "--ntimes", "10000",
                                   "--budget", "60"], {"TMPDIR": str(tmp_path)}, "rmax-node", 1)
    assert not left, left
    _assert_reaped(db, "stream")


def test_kill_during_two_rank_hpl_leaves_nothing(db, tmp_path):
    dat = tmp_path / "HPL.dat"
    dat.write_text(render(HplConfig(ns=[10000], nbs=[128], grids=[(1, 2)])))
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    tree, left = kill_rmax_midway(["hpl", "run", str(dat), "--np", "2", "--launcher", "mpirun"],
                                  {"TMPDIR": str(scratch)}, "rmax-hpl", 2)
    assert not left, left
    assert any(b"mpirun" in cmd.split(b"\0")[0] for _, _, cmd in tree.values())
    assert [p.name[:9] for p in scratch.iterdir()] == ["rmax-hpl-"]   # still there until the next open
    _assert_reaped(db, "hpl")
    assert list(scratch.iterdir()) == []


def test_kill_during_mpi_net_run_leaves_nothing(db, tmp_path):
    tree, left = kill_rmax_midway(["bench", "net", "--layers", "mpi", "--budget", "30", "--launcher", "mpirun"],
                                  {"TMPDIR": str(tmp_path)}, "rmax-net", 2)
    assert not left, left
    _assert_reaped(db, "net")


@pytest.mark.skipif(not shutil.which("mpiexec.mpich"), reason="MPICH is not installed")
def test_kill_during_an_mpich_launch_of_a_foreign_program_leaves_nothing():
    # MPICH's proxy starts a session of its own and `sleep` knows nothing of rmax: only the
    # supervisor's walk of its descendants can end these ranks.
    code = ("from rmax.launch import LaunchSpec, prepare, run_job\n"
            "spec = LaunchSpec(program=['sleep', '60'], np=2, bind='none')\n"
            "run_job(prepare(spec, 'mpiexec'), timeout=120, spec=spec)")
    tree, left = kill_midway([sys.executable, "-c", code], {}, "sleep", 2)
    assert not left, left
    assert any(b"hydra_pmi_proxy" in cmd for _, _, cmd in tree.values())
