"""Scope change tokens: whether a scope a process keeps in memory is still the store's.

A search ranks an agent's scope (tenant, agent, purpose) from columns and opened vectors a
process may keep (``custody.opened_vectors``). Whatever changes the scope's memories or
their vectors writes a fresh token for the scope in the same transaction, here:
``projection.apply`` for every memory event (the event's id; a forgotten subject changes
every scope of its tenant) and ``lethe reindex`` (a random one for every scope). A search
reads the token before anything else in its read transaction and uses a kept scope only
if it was read under the same token; so a write committed on any node or process is seen
by the next search everywhere. Tokens are compared for equality only: no clock, no order.
"""

from __future__ import annotations

import functools
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from lethe.vault.store import driver_rows
from lethe.vault.store.db import upsert_insert
from lethe.vault.store.tables import memories, scope_changes

_p = {n: sa.bindparam(f"b_{n}") for n in ("tenant_id", "agent_id", "purpose", "memory_id", "token")}


def _token_select(tenant_id: Any, agent_id: Any, purpose: Any) -> sa.Select[tuple[str]]:
    """The token of one scope (tenant, agent, purpose), given as values or bound parameters."""
    return sa.select(scope_changes.c.token).where(
        scope_changes.c.tenant_id == tenant_id,
        scope_changes.c.agent_id == agent_id,
        scope_changes.c.purpose == purpose,
    )


_CURRENT = _token_select(_p["tenant_id"], _p["agent_id"], _p["purpose"])
_OF_MEMORY = (
    scope_changes.update()
    .where(
        scope_changes.c.tenant_id == _p["tenant_id"],
        sa.tuple_(scope_changes.c.agent_id, scope_changes.c.purpose).in_(
            sa.select(memories.c.agent_id, memories.c.purpose).where(
                memories.c.tenant_id == _p["tenant_id"], memories.c.id == _p["memory_id"]
            )
        ),
    )
    .values(token=_p["token"])
)


@functools.lru_cache(maxsize=4)
def _upsert(dialect: str) -> Any:
    """INSERT ... ON CONFLICT DO UPDATE of one scope's token, built once per dialect."""
    insert = upsert_insert(scope_changes, dialect)
    return insert.on_conflict_do_update(
        index_elements=["tenant_id", "agent_id", "purpose"], set_={"token": insert.excluded.token}
    )


def token_of(tenant_id: Any, agent_id: Any, purpose: Any) -> sa.ScalarSelect[str]:
    """The scope's token as a scalar subquery (NULL for a scope nothing was ever written to),
    for a statement that reads it with other rows in one round trip."""
    return _token_select(tenant_id, agent_id, purpose).scalar_subquery()


def current(conn: Connection, tenant_id: str, agent_id: str, purpose: str) -> str | None:
    """The scope's token (None for a scope nothing was ever written to)."""
    params = {"b_tenant_id": tenant_id, "b_agent_id": agent_id, "b_purpose": purpose}
    return conn.execute(_CURRENT, params).scalar()


def written(conn: Connection, scopes: list[dict[str, str]]) -> None:
    """Memories were written to these scopes (``tenant_id``, ``agent_id``, ``purpose``, ``token``)."""
    if scopes:
        driver_rows.execute_rows(conn, _upsert(conn.dialect.name), scopes)  # a write's statement


def memory_changed(conn: Connection, tenant_id: str, memory_id: str, token: str) -> None:
    """One memory changed (a transition): a new token for its scope."""
    conn.execute(_OF_MEMORY, {"b_tenant_id": tenant_id, "b_memory_id": memory_id, "b_token": token})


def tenant_changed(conn: Connection, tenant_id: str, token: str) -> None:
    """Memories of the tenant in any scope changed (a subject forgotten)."""
    conn.execute(scope_changes.update().where(scope_changes.c.tenant_id == tenant_id).values(token=token))


def everything_changed(conn: Connection, token: str) -> None:
    """Every scope changed (the vectors were rebuilt)."""
    conn.execute(scope_changes.update().values(token=token))
