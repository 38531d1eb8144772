"""What every ``lethe`` command shares: the store for one command, output, exit codes.

Exit codes (the same for every command):
- 0 success;
- 1 ``REFUSED``: the core refused the command (a ``VaultError``) or a check failed;
- 2 ``SETUP``: configuration, start-up or an input file is wrong (nothing was done);
- 3 ``UNFINISHED``: accepted but not finished; the erasure runner resumes it.

``--json`` output goes through ``print_json``; where the HTTP API answers the same
question, the payload is the HTTP response model's ``model_dump(mode="json")``, so the
two cannot drift.

Exceptions: none escape a command; ``fail`` and ``container`` turn errors into exits.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from enum import IntEnum
from typing import Any, NoReturn

import typer
from pydantic import BaseModel, ValidationError
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from lethe.api.bootstrap import Container, build
from lethe.api.settings import Settings
from lethe.vault.audit.verify import VerificationResult
from lethe.vault.errors import VaultError
from lethe.vault.model import Caller, Role

console = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)


class ExitCode(IntEnum):
    REFUSED = 1
    SETUP = 2
    UNFINISHED = 3


def fail(message: str, code: ExitCode) -> NoReturn:
    """Print ``error: message`` on stderr (markup-safe: messages quote paths) and exit."""
    err.print(f"[red]error:[/red] {escape(message)}")
    raise typer.Exit(code)


def print_json(data: BaseModel | Sequence[BaseModel] | dict[str, Any]) -> None:
    """Print ``--json`` output: a response model (or a list of them) as the HTTP API would."""
    out: dict[str, Any] | list[dict[str, Any]]
    if isinstance(data, BaseModel):
        out = data.model_dump(mode="json")
    elif isinstance(data, dict):
        out = data
    else:
        out = [m.model_dump(mode="json") for m in data]
    typer.echo(json.dumps(out, indent=2))


def print_checks(result: VerificationResult, title: str, elapsed: float, as_json: bool) -> None:
    """A verifier's checks as a table (or JSON), the failed ones named, and the verdict."""
    if as_json:
        print_json(
            {
                "ok": result.ok,
                "id": result.report_id,
                "first_failure": result.first_failure.name if result.first_failure else None,
                "checks": [{"name": c.name, "ok": c.ok, "detail": c.detail} for c in result.checks],
            }
        )
        return
    table = Table("check", "result", "detail", title=title)
    for c in result.checks:
        table.add_row(escape(c.name), "[green]pass[/green]" if c.ok else "[red]FAIL[/red]", escape(c.detail))
    console.print(table)
    if not result.ok:
        typer.echo(f"failed checks: {', '.join(result.failed)}")
    typer.echo(f"{result.summary()} [{elapsed * 1000:.1f} ms]")


def load_settings() -> Settings:
    """The ``LETHE_*`` settings; a bad one exits 2 with one readable line per setting.

    The line names the variable and the rule, never the value (it may be a secret).
    """
    try:
        return Settings()
    except ValidationError as exc:
        problems = []
        for e in exc.errors(include_input=False, include_url=False):
            name = f"LETHE_{str(e['loc'][0]).upper()}" if e["loc"] else "retention settings"
            problems.append(f"{name}: {e['msg'].removeprefix('Value error, ')}")
        fail("configuration refused: " + "; ".join(problems), ExitCode.SETUP)


def officer(tenant: str) -> Caller:
    """The caller a CLI command acts as for a tenant: its operator is its privacy officer."""
    return Caller(tenant, Role.PRIVACY_OFFICER, None, frozenset(), principal="cli")


def reviewer(tenant: str) -> Caller:
    """The caller ``lethe review`` acts as: the tenant's reviewer, who writes nothing itself."""
    return Caller(tenant, Role.REVIEWER, None, frozenset(), principal="cli")


@contextmanager
def container(create: bool = False) -> Iterator[Container]:
    """The store, opened for one command; a missing or foreign store exits 2 with the fix."""
    try:
        c = build(load_settings(), create=create)
    except (VaultError, ValueError, OSError) as exc:
        fail(str(exc), ExitCode.SETUP)
    try:
        yield c
    except VaultError as exc:
        fail(f"{exc.title}: {exc.detail}", ExitCode.REFUSED)
    finally:
        c.close()
