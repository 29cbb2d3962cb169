"""`rmax slurm script`: an sbatch script that runs rmax inside an allocation."""

from __future__ import annotations

import subprocess

from cliutil import assert_one_line_error, run_cli


def test_script_runs_rmax_with_srun_inside(tmp_path):
    out = tmp_path / "job.sbatch"
    run_cli("slurm", "script", "--nodes", "4", "--ntasks-per-node", "2", "--time", "00:30:00", "-o", str(out),
            "--", "rmax", "survey", "--label", "two words", check=True)
    text = out.read_text()
    assert text.startswith("#!/bin/bash\n")
    for line in ("#SBATCH --nodes=4", "#SBATCH --ntasks-per-node=2", "#SBATCH --time=00:30:00", "#SBATCH --exclusive"):
        assert line in text
    assert text.rstrip().endswith("survey --label 'two words'")
    assert subprocess.run(["bash", "-n", str(out)]).returncode == 0


def test_srun_is_the_launcher_inside_an_allocation(monkeypatch):
    from rmax.launch import get_launcher

    monkeypatch.setenv("SLURM_JOB_ID", "42")
    assert get_launcher().name == "srun"


def test_bad_scripts():
    assert_one_line_error(run_cli("slurm", "script", "--", "ls"), 2, "runs rmax commands")
    assert_one_line_error(run_cli("slurm", "script", "--time", "soon", "--", "rmax", "survey"), 2, "not a Slurm time")
    assert_one_line_error(run_cli("slurm", "script"), 2, "no command")
