"""The rmax-hpl tests' fixtures (the helpers themselves live in hplutil.py, importable by name)."""

from hplutil import hpl_dat, hpl_run  # noqa: F401  (fixtures)
