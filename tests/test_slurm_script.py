"""`rmax slurm script`'s scheduling options and extra #SBATCH lines: written when valid, refused
(one line, no file) when a value could split or add a line. What sbatch makes of them: the
virtual Slurm cluster's test (tests/vcluster/test_vcluster_slurm.py)."""

import pytest
from cliutil import run_in_process


def test_scheduling_options_and_extra_directives_are_written(tmp_path):
    out = tmp_path / "job.sbatch"
    code, _, err = run_in_process(["slurm", "script", "--qos", "high", "--reservation", "maint_1", "--constraint",
                                   "ib&[rack1|rack2]", "--exclude", "node[03-04],login1", "--sbatch=--gres=gpu:1",
                                   "--sbatch", "--requeue", "-o", str(out), "--", "rmax", "survey"])
    assert code == 0, err
    lines = out.read_text().splitlines()
    for line in ("#SBATCH --qos=high", "#SBATCH --reservation=maint_1", "#SBATCH --constraint='ib&[rack1|rack2]'",
                 "#SBATCH --exclude='node[03-04],login1'", "#SBATCH --gres=gpu:1", "#SBATCH --requeue"):
        assert line in lines, (line, lines)
    assert lines.index("#SBATCH --requeue") < lines.index("set -euo pipefail")   # directives before commands


@pytest.mark.parametrize("args, words", [
    (["--sbatch=--nodes=3"], "rmax writes --nodes itself"),
    (["--sbatch", "gres=gpu:1"], "is not an sbatch option"),
    (["--sbatch=--comment=a b"], "is not an sbatch option"),
    (["--exclude", "node[1-"], "--exclude"),
    (["--constraint", "a;b"], "is not a Slurm constraint"),
    (["--qos", "a'b"], "is not a Slurm name"),
])
def test_a_refused_value_writes_no_script(tmp_path, args, words):
    out = tmp_path / "job.sbatch"
    code, _, err = run_in_process(["slurm", "script", *args, "-o", str(out), "--", "rmax", "survey"])
    assert code == 2 and words in err and not out.exists(), err
