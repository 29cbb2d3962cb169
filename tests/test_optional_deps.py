"""optuna and jsonschema are not runtime dependencies: without optuna only `--strategy bayes` is
refused (one line, before any run is stored) and auto tunes by coordinate descent instead."""

import subprocess
import sys

from cliutil import ROOT, assert_one_line_error, run_cli

# Put first on the path, it makes optuna impossible to import, as where it is not installed.
HIDE = '''import sys
class _Hidden:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("optuna", "jsonschema"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, _Hidden())
'''


def test_rmax_runs_without_optuna_and_jsonschema(tmp_path, db):
    (tmp_path / "sitecustomize.py").write_text(HIDE)
    env = {"PYTHONPATH": f"{tmp_path}:{ROOT / 'src'}"}
    proc = run_cli("tune", "--strategy", "bayes", "--np", "2", "--n", "2000", "--trials", "3", env=env, timeout=60)
    assert_one_line_error(proc, 2, "needs optuna", "rmax[bayes]")
    assert run_cli("runs", "list", "--json", env=env, check=True).stdout.strip() == "[]"   # refused before any run
    code = "from rmax.tune.strategies.auto import choose; print(choose(100), choose(5))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": env["PYTHONPATH"], "PATH": "/usr/bin:/bin"}).stdout.split()
    assert out == ["coordinate", "model"]
    with_optuna = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                 check=True, env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"})
    assert with_optuna.stdout.split() == ["bayes", "model"]
