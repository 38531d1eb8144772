"""Which memories an agent (or an operator) may read: its own, and the operator's of its purpose.

An agent reads the memories it wrote itself, in purposes its credential covers, once
released from quarantine. Operator memories (written by an ``operator`` credential,
authority ``operator``: configuration, house rules, verified facts) are the deployment's
voice, not one agent's: every agent of the tenant reads those of a purpose its credential
covers. Per purpose, not tenant-wide: a purpose is a processing purpose under data
protection law, so an operator fact for ``billing`` stays out of a ``support`` agent's view.
In a search they join the results only when relevant (a query term matches): an agent's
own memories rank in full as before, but standing must not fill every answer with
house rules that do not bear on the question.
Reviewers read any live memory of the tenant (they review them); other roles read none
by id (an operator has its write's response).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa

from lethe.vault.clock import to_db
from lethe.vault.model import GONE, Authority, Caller, Role, Status
from lethe.vault.store.constant import constant
from lethe.vault.store.tables import memories

OPERATOR = Authority.OPERATOR.value
# In the SQL itself, not bound: PostgreSQL then plans the operator statements once (``store.constant``).
_IS_OPERATOR = memories.c.authority == constant(OPERATOR)


def agent_scope(
    caller: Caller, purpose: str, relevant: sa.ColumnElement[bool] | None = None
) -> list[sa.ColumnElement[bool]]:
    """The WHERE clauses of an agent's search in one purpose (status and expiry apart);
    ``relevant``, if given, must hold for an operator memory to be included."""
    return scope_clauses(caller.tenant_id, caller.agent_id, purpose, relevant)


def scope_clauses(
    tenant_id: Any, agent_id: Any, purpose: Any, relevant: sa.ColumnElement[bool] | None = None
) -> list[sa.ColumnElement[bool]]:
    """``agent_scope`` for values or bound parameters (a statement built once and cached)."""
    return [
        memories.c.tenant_id == tenant_id,
        memories.c.purpose == purpose,
        sa.or_(
            memories.c.agent_id == agent_id,
            _IS_OPERATOR if relevant is None else sa.and_(_IS_OPERATOR, relevant),
        ),
    ]


def scope_branches(
    tenant_id: Any, agent_id: Any, purpose: Any
) -> tuple[list[sa.ColumnElement[bool]], list[sa.ColumnElement[bool]]]:
    """``scope_clauses`` as two disjoint branches, for a UNION ALL: the agent's own
    memories, and the operator memories of the purpose that others wrote (a search still
    adds "and relevant" to the second). One range of ``ix_memories_scope`` serves the first
    alone; an OR of the two made SQLite read every row of the scope from the table."""
    base = [memories.c.tenant_id == tenant_id, memories.c.purpose == purpose]
    own = [*base, memories.c.agent_id == agent_id]
    return own, [*base, _IS_OPERATOR, memories.c.agent_id != agent_id]


def may_read(caller: Caller, row: Any, now: datetime) -> bool:
    """Whether ``caller`` may read the ``memories`` row by id (anything else reads as unknown)."""
    if row.tenant_id != caller.tenant_id or row.status in (*GONE, Status.EXPIRED):
        return False
    if to_db(now) >= row.expires_at:
        return False
    if caller.role is Role.REVIEWER:
        return True
    if not caller.may_use(row.purpose) or row.status == Status.QUARANTINED:
        return False
    if caller.role is Role.AGENT:
        return row.agent_id == caller.agent_id or row.authority == OPERATOR
    return False
