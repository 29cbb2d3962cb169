"""Print the dependencies listed in pyproject.toml, space-separated (used by the Makefile): the
runtime ones and every optional extra's (bayes: optuna; test: jsonschema), since the development
environment runs every strategy and every test."""
import pathlib
import tomllib

pyproject = pathlib.Path(__file__).resolve().parent.parent / "pyproject.toml"
project = tomllib.loads(pyproject.read_text())["project"]
extras = [d for group in project.get("optional-dependencies", {}).values() for d in group]
print(" ".join(dict.fromkeys(project["dependencies"] + extras)))
