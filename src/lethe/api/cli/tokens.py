"""API tokens: ``lethe token create|revoke|list`` (a token is shown once; only its hash is stored)."""

from __future__ import annotations

from datetime import timedelta

import typer
from rich.table import Table

from lethe.api.cli.common import console, container, print_json
from lethe.api.http.schemas.tokens import TokenCreated, TokenList
from lethe.vault.clock import utcnow
from lethe.vault.model import Role, SourceType

app = typer.Typer()
token_app = typer.Typer(
    help="Mint, revoke and list API tokens (shown once; stored only as hashes).", no_args_is_help=True
)
app.add_typer(token_app, name="token")


@token_app.command("create")
def token_create(
    tenant: str = typer.Option(..., "--tenant"),
    role: Role = typer.Option(..., "--role"),
    agent: str | None = typer.Option(None, "--agent", help="Required for agent tokens."),
    purpose: list[str] = typer.Option([], "--purpose", help="Repeat for several; agents need one."),
    ttl_days: int | None = typer.Option(None, "--ttl-days", min=1, max=3650),  # vault.tokens.MAX_TOKEN_TTL
    description: str | None = typer.Option(None, "--description"),
    name: str | None = typer.Option(None, "--name", help="Who the token stands for, shown in records."),
    email: str | None = typer.Option(None, "--email", help="Their e-mail address."),
    source_type: list[SourceType] = typer.Option(
        [],
        "--source-type",
        help="A source type the token may assert (repeat for several); none given: the role's default.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the token and its metadata as JSON."),
) -> None:
    """Mint a token and print it once."""
    with container() as c:
        token, info = c.tokens.create(
            role,
            tenant,
            agent_id=agent,
            purposes=purpose,
            ttl=timedelta(days=ttl_days) if ttl_days else None,
            description=description,
            display_name=name,
            email=email,
            created_by="cli",
            source_types=[s.value for s in source_type] or None,
        )
    if as_json:
        print_json(TokenCreated.from_minted(token, info))
        return
    typer.echo(f"token (shown once, store it now): {token}")
    typer.echo(
        f"id: {info.id}  role: {info.role.value}  tenant: {info.tenant_id}"
        + (f"  agent: {info.agent_id}" if info.agent_id else "")
        + (f"  purposes: {','.join(info.purposes)}" if info.purposes else "")
        + (f"  source types: {','.join(info.source_types)}" if info.source_types else "")
        + (f"  expires: {info.expires_at.isoformat()}" if info.expires_at else "")
    )


@token_app.command("revoke")
def token_revoke(token_id: str = typer.Argument(..., metavar="ID")) -> None:
    """Revoke a token at once (by its id, never the token)."""
    with container() as c:
        info = c.tokens.revoke(token_id, revoked_by="cli")
    console.print(f"revoked {info.id} ({info.role.value}, tenant {info.tenant_id})")


@token_app.command("list")
def token_list(
    tenant: str = typer.Option(..., "--tenant"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """List a tenant's tokens (ids and scope; the tokens themselves are not stored)."""
    with container() as c:
        infos = c.tokens.list(tenant)
    if as_json:
        print_json(TokenList.from_domain(infos))
        return
    now = utcnow()
    # ``asserts``: the source types the token may assert ("role default" when minted without).
    # The state never shrinks away when a narrow terminal squeezes the table.
    table = Table("id", "name", "role", "agent", "purposes", "asserts", "created", "expires")
    table.add_column("state", no_wrap=True, min_width=7)
    for i in infos:
        state = "revoked" if i.revoked_at else ("active" if i.active(now) else "expired")
        table.add_row(
            i.id,
            i.display_name or "",
            i.role.value,
            i.agent_id or "",
            ",".join(i.purposes),
            "role default" if i.source_types is None else ",".join(i.source_types),
            i.created_at.strftime("%Y-%m-%d %H:%M"),
            i.expires_at.strftime("%Y-%m-%d %H:%M") if i.expires_at else "never",
            state,
        )
    console.print(table)
