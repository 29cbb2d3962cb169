"""The rmax command line: thin click commands that call workflows and print."""

from rmax.cli.app import cli, main

__all__ = ["cli", "main"]
