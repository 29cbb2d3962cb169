"""Print the runtime dependencies listed in pyproject.toml, space-separated (used by the Makefile)."""
import pathlib
import tomllib

pyproject = pathlib.Path(__file__).resolve().parent.parent / "pyproject.toml"
print(" ".join(tomllib.loads(pyproject.read_text())["project"]["dependencies"]))
