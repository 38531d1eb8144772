"""The ``lethe`` command line. Thin: parse, call vault/, render; errors exit non-zero.

Exit codes: 1 for a refused command (a ``VaultError``: unknown token, invalid scope),
2 for a configuration or start-up problem.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

import typer
from rich.console import Console
from rich.markup import escape

from lethe.api.bootstrap import Container, build, require_initialised
from lethe.api.settings import Settings
from lethe.api.store_lease import exclusive_lease
from lethe.vault.errors import StoreNotReady, VaultError
from lethe.vault.model import Role

app = typer.Typer(help="Lethe: a crypto-shredding privacy vault for AI agents' memory.", no_args_is_help=True)
console = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)
token_app = typer.Typer(
    help="Mint, revoke and list API tokens (shown once; stored only as hashes).", no_args_is_help=True
)
app.add_typer(token_app, name="token")


@app.callback()
def _private_files() -> None:
    """Every file a command creates (stores, backups, reports) is private to the owner."""
    os.umask(0o077)


@contextmanager
def container(create: bool = False) -> Iterator[Container]:
    """The store, opened for one command; a missing or foreign store exits 2 with the fix."""
    try:
        c = build(Settings(), create=create)
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
    """Create the data dir, database schema, local keystore and master key (only what is missing)."""
    with container(create=True) as c:
        if c.created:
            for line in c.created:
                console.print(f"created {line}")
        else:
            console.print("already initialised; nothing created")
        console.print(f"database: {c.settings.db_url.split('@')[-1]} (schema at the latest migration)")


@app.command()
def migrate() -> None:
    """Upgrade the store's schema to this release (stop every Lethe process and back up first)."""
    from lethe.vault.store.db import make_engine
    from lethe.vault.store.schema import schema_state, upgrade

    settings = Settings()
    try:
        require_initialised(settings)
        engine = make_engine(settings.db_url)
        before = schema_state(engine)
        if not before.known:
            raise StoreNotReady(f"the store's schema {before.current} is newer than this Lethe's")
        if before.up_to_date:
            console.print(f"schema already at {before.head}; nothing to do")
            return
        with exclusive_lease(settings.data_dir, engine, "a migration"):
            upgrade(engine)
        engine.dispose()
    except VaultError as exc:
        err.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from None
    console.print(f"schema upgraded from {before.current or 'nothing'} to {before.head}")


@app.command()
def replay(
    check: bool = typer.Option(False, "--check", help="Rebuild into a scratch copy and report differences."),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Rebuild the projection from the event log (or check that it would be identical)."""
    from lethe.vault.store import replay as replay_mod

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


@app.command()
def serve(
    host: str = typer.Option("127.0.0.1", "--host", help="Interface to listen on (loopback by default)."),
    port: int = typer.Option(8080, "--port", min=1, max=65535),
) -> None:
    """Run the HTTP API on an initialised store (`lethe init`); the first run mints an admin token."""
    import uvicorn

    from lethe.api.http.app import create_app
    from lethe.api.http.logging import configure_logging
    from lethe.vault.access.tokens import TokenService

    settings = Settings()
    shown = f"[{host}]" if ":" in host else host
    with container() as c:
        for line in c.created:
            console.print(f"created {line}")
        tokens = TokenService(c.uow)
        if not tokens.any_with_role(Role.ADMIN):
            token, info = tokens.create(
                Role.ADMIN, settings.bootstrap_tenant, description="minted by the first `lethe serve`"
            )
            typer.echo(f"admin token for tenant {info.tenant_id} (shown once, store it now): {token}")
            typer.echo(f"token id: {info.id}")
        elif "bootstrap_tenant" in settings.model_fields_set and not tokens.any_with_role(
            Role.ADMIN, settings.bootstrap_tenant
        ):
            tenant = escape(settings.bootstrap_tenant)
            err.print(
                f"[yellow]warning:[/yellow] LETHE_BOOTSTRAP_TENANT={tenant} is ignored: the admin token "
                "is minted on the first start only, and this store has one. Mint one with "
                f"`lethe token create --tenant {tenant} --role admin`."
            )
    typer.echo(f"OpenAPI docs: http://{shown}:{port}/docs")
    configure_logging(settings.log_level)
    uvicorn.run(
        create_app(settings),
        host=host,
        port=port,
        access_log=False,  # uvicorn's access line holds raw paths and query strings
        log_config=None,
        server_header=False,
    )


@token_app.command("create")
def token_create(
    tenant: str = typer.Option(..., "--tenant"),
    role: Role = typer.Option(..., "--role"),
    agent: str | None = typer.Option(None, "--agent", help="Required for agent tokens."),
    purpose: list[str] = typer.Option([], "--purpose", help="Repeat for several; agents need one."),
    ttl_days: int | None = typer.Option(None, "--ttl-days", min=1, max=3650),  # vault.tokens.MAX_TOKEN_TTL
    description: str | None = typer.Option(None, "--description"),
    as_json: bool = typer.Option(False, "--json", help="Print the token and its metadata as JSON."),
) -> None:
    """Mint a token and print it once."""
    from datetime import timedelta

    from lethe.api.http.schemas.tokens import TokenCreated
    from lethe.vault.access.tokens import TokenService

    with container() as c:
        token, info = TokenService(c.uow).create(
            role,
            tenant,
            agent_id=agent,
            purposes=purpose,
            ttl=timedelta(days=ttl_days) if ttl_days else None,
            description=description,
        )
    if as_json:
        typer.echo(json.dumps(TokenCreated.from_domain(token, info).model_dump(mode="json")))
        return
    typer.echo(f"token (shown once, store it now): {token}")
    typer.echo(
        f"id: {info.id}  role: {info.role.value}  tenant: {info.tenant_id}"
        + (f"  agent: {info.agent_id}" if info.agent_id else "")
        + (f"  purposes: {','.join(info.purposes)}" if info.purposes else "")
        + (f"  expires: {info.expires_at.isoformat()}" if info.expires_at else "")
    )


@token_app.command("revoke")
def token_revoke(token_id: str = typer.Argument(..., metavar="ID")) -> None:
    """Revoke a token at once (by its id, never the token)."""
    from lethe.vault.access.tokens import TokenService

    with container() as c:
        info = TokenService(c.uow).revoke(token_id)
    console.print(f"revoked {info.id} ({info.role.value}, tenant {info.tenant_id})")


@token_app.command("list")
def token_list(
    tenant: str = typer.Option(..., "--tenant"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """List a tenant's tokens (ids and scope; the tokens themselves are not stored)."""
    from rich.table import Table

    from lethe.api.http.schemas.tokens import TokenOut
    from lethe.vault.access.tokens import TokenService
    from lethe.vault.clock import utcnow

    with container() as c:
        infos = TokenService(c.uow).list(tenant)
    if as_json:
        typer.echo(json.dumps([TokenOut(**TokenOut.fields_of(i)).model_dump(mode="json") for i in infos]))
        return
    now = utcnow()
    table = Table("id", "role", "agent", "purposes", "created", "expires", "state")
    for i in infos:
        state = "revoked" if i.revoked_at else ("active" if i.active(now) else "expired")
        table.add_row(
            i.id,
            i.role.value,
            i.agent_id or "",
            ",".join(i.purposes),
            i.created_at.strftime("%Y-%m-%d %H:%M"),
            i.expires_at.strftime("%Y-%m-%d %H:%M") if i.expires_at else "never",
            state,
        )
    console.print(table)


from lethe.api.cli.audit import register as _register_audit  # noqa: E402  (audit, verify, report commands)

_register_audit(app)

from lethe.api.cli.erasure import register as _register_erasure  # noqa: E402  (forget, erasure, compact, backup)

_register_erasure(app, container)

from lethe.api.cli.bench import register as _register_bench  # noqa: E402  (bench)

_register_bench(app)
