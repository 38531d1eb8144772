"""The ``lethe`` command line. Thin: parse, call vault/, render; errors exit non-zero."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import typer
from rich.console import Console

from api.bootstrap import Container, build
from api.settings import Settings
from vault.errors import VaultError

app = typer.Typer(help="Lethe: a crypto-shredding privacy vault for AI agents' memory.", no_args_is_help=True)
console = Console()
err = Console(stderr=True)


@contextmanager
def container() -> Iterator[Container]:
    try:
        c = build(Settings())
    except (VaultError, ValueError, OSError) as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from None
    try:
        yield c
    except VaultError as exc:
        err.print(f"[red]error:[/red] {exc.title}: {exc.detail}")
        raise typer.Exit(1) from None
    finally:
        c.close()


@app.command()
def init() -> None:
    """Create the data dir, database schema, local keystore and master key."""
    with container() as c:
        if c.created:
            for line in c.created:
                console.print(f"created {line}")
        else:
            console.print("already initialised; nothing created")
        console.print(f"database: {c.settings.db_url.split('@')[-1]} (schema at the latest migration)")


@app.command()
def replay(
    check: bool = typer.Option(False, "--check", help="Rebuild into a scratch copy and report differences."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Rebuild the projection from the event log (or check that it would be identical)."""
    from vault import replay as replay_mod

    with container() as c:
        report = replay_mod.check(c.uow.engine) if check else replay_mod.rebuild(c.uow.engine)
    if as_json:
        console.print_json(
            json.dumps(
                {"events": report.events, "identical": report.identical, "differences": report.differences}
            )
        )
    elif check:
        console.print(f"replayed {report.events} events into a scratch copy")
        for d in report.differences:
            console.print(f"[red]difference[/red] {d}")
        console.print("[green]identical[/green]" if report.identical else "[red]projection differs[/red]")
    else:
        console.print(f"rebuilt the projection from {report.events} events")
    if check and not report.identical:
        sys.exit(1)
