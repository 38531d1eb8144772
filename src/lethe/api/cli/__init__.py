"""The ``lethe`` command line (Typer); ``app`` is the console script's entry point."""

from lethe.api.cli.main import app

__all__ = ["app"]
