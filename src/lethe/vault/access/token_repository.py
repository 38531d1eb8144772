"""The SQL of API tokens (``api_tokens``) and the one mapper of its rows, ``token_info``.

Functions over the caller's ``Connection``, so each joins the transaction ``TokenService``
opened: the rules (who may mint what, when a token is valid, the audit events) stay in
``access.tokens``, and how tokens are stored (a hash, never the secret) stays here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from lethe.vault.clock import from_db, to_db
from lethe.vault.model import Role, SourceType
from lethe.vault.store import driver_reads
from lethe.vault.store.tables import api_tokens

# Every request looks its token up: the statement is built once, not per request.
_BY_HASH = sa.select(api_tokens).where(api_tokens.c.token_hash == sa.bindparam("digest"))
# Behind PostgreSQL's tenant wall a token is found by its hash before its tenant is known: the
# SECURITY DEFINER function of migration 0024 reads as the table's owner, by hash only.
_TOKEN_BY_HASH = sa.func.lethe_token_by_hash(sa.bindparam("digest", type_=sa.String)).table_valued(
    *(sa.column(c.name, c.type) for c in api_tokens.c)
)
_BY_HASH_PAST_THE_WALL = sa.select(*_TOKEN_BY_HASH.c)

# 1 while the token bound as ``token_id`` exists unrevoked, else NULL: a scalar column for a
# statement to carry (``access.known_tokens``).
_t = api_tokens.c
TOKEN_LIVE = (
    sa.select(sa.literal(1))
    .where(_t.id == sa.bindparam("token_id", type_=sa.String), _t.revoked_at.is_(None))
    .scalar_subquery()
    .label("token_live")
)
_LIVE = sa.select(TOKEN_LIVE)


@dataclass(frozen=True)
class TokenInfo:
    """What may be shown about a token after its creation: everything but the secret."""

    id: str
    role: Role
    tenant_id: str
    agent_id: str | None
    purposes: tuple[str, ...]
    description: str | None
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None
    display_name: str | None = None
    email: str | None = None
    source_types: tuple[SourceType, ...] | None = None  # None: the role's default

    def active(self, now: datetime) -> bool:
        return self.revoked_at is None and (self.expires_at is None or now < self.expires_at)


def token_info(row: Any) -> TokenInfo:
    """The one mapper of an ``api_tokens`` row."""
    return TokenInfo(
        id=row.id,
        role=Role(row.role),
        tenant_id=row.tenant_id,
        agent_id=row.agent_id,
        purposes=tuple(json.loads(row.purposes)),
        description=row.description,
        created_at=from_db(row.created_at),
        expires_at=from_db(row.expires_at) if row.expires_at else None,
        revoked_at=from_db(row.revoked_at) if row.revoked_at else None,
        display_name=row.display_name,
        email=row.email,
        source_types=(
            None if row.source_types is None else tuple(SourceType(s) for s in json.loads(row.source_types))
        ),
    )


def by_hash(conn: Connection, digest: str, past_the_wall: bool) -> Any | None:
    """The row of the token with this SHA-256 (its ``token_hash`` to compare), read at the
    driver (``store.driver_reads``): every request's first statement. ``past_the_wall``:
    PostgreSQL's row security is on, and the tenant is not known yet."""
    return driver_reads.first(conn, _BY_HASH_PAST_THE_WALL if past_the_wall else _BY_HASH, {"digest": digest})


def by_id(conn: Connection, token_id: str) -> TokenInfo | None:
    """One token, or None."""
    row = conn.execute(sa.select(api_tokens).where(api_tokens.c.id == token_id)).first()
    return None if row is None else token_info(row)


def of_tenant(conn: Connection, tenant_id: str) -> list[TokenInfo]:
    """The tenant's tokens, oldest first."""
    rows = conn.execute(
        sa.select(api_tokens)
        .where(api_tokens.c.tenant_id == tenant_id)
        .order_by(api_tokens.c.created_at, api_tokens.c.id)
    ).all()
    return [token_info(r) for r in rows]


def any_with_role(conn: Connection, role: Role, tenant_id: str | None = None) -> bool:
    """Whether a token of this role (in this tenant, if given) was ever minted."""
    q = sa.select(api_tokens.c.id).where(api_tokens.c.role == role.value)
    if tenant_id is not None:
        q = q.where(api_tokens.c.tenant_id == tenant_id)
    return conn.execute(q.limit(1)).first() is not None


def add(conn: Connection, token_hash: str, info: TokenInfo) -> None:
    """Store a minted token's row: its hash, never the token."""
    asserts = info.source_types
    conn.execute(
        api_tokens.insert().values(
            id=info.id,
            token_hash=token_hash,
            role=info.role.value,
            tenant_id=info.tenant_id,
            agent_id=info.agent_id,
            purposes=json.dumps(list(info.purposes)),
            description=info.description,
            display_name=info.display_name,
            email=info.email,
            source_types=None if asserts is None else json.dumps(list(asserts)),
            created_at=to_db(info.created_at),
            expires_at=to_db(info.expires_at) if info.expires_at else None,
        )
    )


def mark_revoked(conn: Connection, token_id: str, at: datetime) -> None:
    """Record the token's revocation time."""
    conn.execute(api_tokens.update().where(api_tokens.c.id == token_id).values(revoked_at=to_db(at)))


def token_live(conn: Connection, token_id: str) -> Any:
    """``TOKEN_LIVE`` of one token, read alone: 1 while it exists unrevoked, else None."""
    row = driver_reads.first(conn, _LIVE, {"token_id": token_id})
    return None if row is None else row.token_live


def display_names(conn: Connection, tenant_id: str, token_ids: Iterable[str]) -> dict[str, str]:
    """The display names of those of the tenant's tokens that have one, by token id."""
    rows = conn.execute(
        sa.select(api_tokens.c.id, api_tokens.c.display_name).where(
            api_tokens.c.tenant_id == tenant_id,
            api_tokens.c.id.in_(sorted(token_ids)),
            api_tokens.c.display_name.is_not(None),
        )
    )
    return {r.id: r.display_name for r in rows}
