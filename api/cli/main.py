"""The ``lethe`` command line: one Typer app over one module per area.

Each area module (``store``, ``tokens``, ``erasure``, ``backup``, ``audit``, ``bench``)
defines its own ``app = typer.Typer()`` holding its top-level commands and its command
groups; this root merges them (``add_typer`` without a name adds their commands at the
top level). Shared helpers (the store for one command, output, exit codes) live in
``api.cli.common``.
"""

from __future__ import annotations

import os

import typer

from lethe.api.cli import audit, backup, bench, erasure, store, tokens

app = typer.Typer(help="Lethe: a crypto-shredding privacy vault for AI agents' memory.", no_args_is_help=True)
for area in (store, tokens, erasure, backup, audit, bench):
    app.add_typer(area.app)


@app.callback()
def _private_files() -> None:
    """Every file a command creates (stores, backups, reports) is private to the owner."""
    os.umask(0o077)
