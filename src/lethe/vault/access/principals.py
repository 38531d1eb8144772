"""Who acted: a principal id (a token id, as records store it) resolved to its display name.

Records (erasure jobs' ``requested_by``, legal holds' ``placed_by``, extensions'
``extended_by``, audit events) store the principal id, which never changes and is safe to
log. The display name an admin gave the token is looked up when a record is *presented*,
so a record stays exact when a token is revoked, and no name (which is personal data
of the officer) is copied into the append-only log. Principals that are not tokens
("cli", "system") have no name: presenters show the id.

Exceptions: none of its own; ``StoreUnavailable`` (503) from the unit of work.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy.engine import Connection

from lethe.vault.access import token_repository
from lethe.vault.store.db import UnitOfWork
from lethe.vault.store.tenancy import acting_for


def display_names(conn: Connection, tenant_id: str, principals: Iterable[str]) -> dict[str, str]:
    """The display names of those principals that are named tokens of the tenant, by principal id."""
    wanted = sorted({p for p in principals if p})
    if not wanted:
        return {}
    return token_repository.display_names(conn, tenant_id, wanted)


def display_name(uow: UnitOfWork, tenant_id: str, principal: str) -> str | None:
    """One principal's display name (for presenters outside a transaction, e.g. certificates)."""
    with acting_for(tenant_id), uow.read() as conn:
        return display_names(conn, tenant_id, [principal]).get(principal)
