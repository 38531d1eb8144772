"""The ``lethe`` command line: one Typer app over one module per area.

Each area module (``store``, ``tokens``, ``erasure``, ``subject``, ``review``, ``operator``,
``backup``, ``audit``, ``bench``, ``mcp``)
defines its own ``app = typer.Typer()`` holding its top-level commands and its command
groups; this root merges them (``add_typer`` without a name adds their commands at the
top level). Shared helpers (the store for one command, output, exit codes) live in
``api.cli.common``.
"""

from __future__ import annotations

import os

import typer

from lethe.api.cli.audit import app as audit_commands
from lethe.api.cli.backup import app as backup_commands
from lethe.api.cli.bench import app as bench_commands
from lethe.api.cli.erasure import app as erasure_commands
from lethe.api.cli.mcp import app as mcp_commands
from lethe.api.cli.operator import app as operator_commands
from lethe.api.cli.review import app as review_commands
from lethe.api.cli.store import app as store_commands
from lethe.api.cli.subject import app as subject_commands
from lethe.api.cli.tokens import app as token_commands

app = typer.Typer(help="Lethe: a crypto-shredding privacy vault for AI agents' memory.", no_args_is_help=True)
for commands in (
    store_commands,
    token_commands,
    erasure_commands,
    review_commands,
    operator_commands,
    subject_commands,
    backup_commands,
    audit_commands,
    bench_commands,
    mcp_commands,
):
    app.add_typer(commands)


@app.callback()
def _private_files() -> None:
    """Every file a command creates (stores, backups, reports) is private to the owner."""
    os.umask(0o077)
