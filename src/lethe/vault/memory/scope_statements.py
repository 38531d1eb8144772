"""The statements that read one scope for ``memory.ranked_scope``: a read model over the
memories, their sealed vectors and the postings (the rows a search ranks; no writes).

Each statement is built once per shape (dialect, subject filter, kinds filter, cap, model)
and cached; times are read as ISO text so numpy parses a column at once.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from datetime import datetime
from typing import Any, NamedTuple

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from lethe.vault.access.known_tokens import TOKEN_LIVE, confirm
from lethe.vault.clock import to_db
from lethe.vault.memory.visibility import scope_branches
from lethe.vault.model import Caller, Status
from lethe.vault.store import driver_reads, scope_changes
from lethe.vault.store.in_list import one_of
from lethe.vault.store.tables import memories, memory_vectors, search_postings


class Request(NamedTuple):
    """One search as the ranking needs it: who asks, for what, when, narrowed how."""

    caller: Caller
    purpose: str
    query: str
    query_terms: list[str]
    now: datetime
    subject_ref: str | None
    kinds: Sequence[str]
    blend: dict[str, float] | None = None
    # The id of a token recalled without reading its revocation (``TokenService.recall``):
    # the first statement reads it (``vault.access.known_tokens``), refusing a revoked one.
    confirm_token: str | None = None


def bound_params(r: Request) -> dict[str, Any]:
    """The bound values of a scope or operator statement for this search."""
    params: dict[str, Any] = {
        "tenant": r.caller.tenant_id,
        "agent": r.caller.agent_id,
        "purpose": r.purpose,
        "now": to_db(r.now),
    }
    if r.subject_ref is not None:
        params["subject_ref"] = r.subject_ref
    if r.kinds:
        params["kinds"] = list(r.kinds)
    return params


def operator_rows(conn: Connection, r: Request) -> list[Any]:
    """The operator memories of the purpose (not the agent's own) that match a query term."""
    stmt = _operator_statement(conn.dialect.name, r.subject_ref is not None, bool(r.kinds))
    return list(conn.execute(stmt, {**bound_params(r), "query_hashes": r.query_terms}))


def token_and_operator_rows(conn: Connection, r: Request) -> tuple[str | None, list[Any]]:
    """The scope's change token and ``operator_rows``, read by one statement, which also
    reads whether ``r.confirm_token`` is unrevoked (``Unauthenticated`` if not)."""
    confirming = r.confirm_token is not None
    stmt = _token_and_operator_statement(
        conn.dialect.name, r.subject_ref is not None, bool(r.kinds), confirming
    )
    params = {**bound_params(r), "query_hashes": r.query_terms}
    if confirming:
        params["token_id"] = r.confirm_token
    rows = driver_reads.rows(conn, stmt, params)
    if confirming:
        confirm(rows[0].token_live)
    return rows[0].scope_token, [row for row in rows if row.id is not None]


def _time_text(dialect: str, column: sa.ColumnElement[Any]) -> sa.ColumnElement[Any]:
    """A time column as ISO text: parsed by numpy at once (a datetime object per value was a
    third of a scope read)."""
    if dialect == "sqlite":
        return sa.type_coerce(column, sa.String)  # stored as 'YYYY-MM-DD HH:MM:SS.ffffff'
    return sa.func.to_char(column, 'YYYY-MM-DD"T"HH24:MI:SS.US')


def _columns(dialect: str) -> list[sa.ColumnElement[Any]]:
    """What a scope keeps of each memory, in ``Scope``'s order."""
    m = memories.c
    return [
        m.id,
        m.token_estimate,
        m.authority,
        m.trust,
        _time_text(dialect, m.created_at).label("created_at"),
        _time_text(dialect, m.expires_at).label("expires_at"),
        m.confidence,
        m.subject_ref,
        m.key_generation,
        m.sealed_version,
        m.kind,
    ]


def _filters(subject: bool, kinds: bool) -> list[sa.ColumnElement[bool]]:
    common: list[sa.ColumnElement[bool]] = [
        memories.c.status == Status.ACTIVE.value,
        memories.c.expires_at > sa.bindparam("now", type_=sa.DateTime),
    ]
    if subject:
        common.append(memories.c.subject_ref == sa.bindparam("subject_ref"))
    if kinds:
        common.append(one_of(memories.c.kind, "kinds"))
    return common


def _branches() -> tuple[list[sa.ColumnElement[bool]], list[sa.ColumnElement[bool]]]:
    return scope_branches(
        sa.bindparam("tenant", type_=sa.String), sa.bindparam("agent"), sa.bindparam("purpose")
    )


@functools.lru_cache(maxsize=64)
def scope_statement(dialect: str, subject: bool, kinds: bool, cap: int, model: str | None) -> sa.Select[Any]:
    """The agent's own scope of one shape, built once: at most ``cap`` + 1 rows (one more says
    "over the cap"), one range of ``ix_memories_scope``. With ``model``, each row also
    carries its sealed vector of that model (None if it has none)."""
    own, _ = _branches()
    joined: sa.FromClause = memories
    sealed: list[sa.ColumnElement[Any]] = []
    if model is not None:
        v = memory_vectors
        joined = memories.outerjoin(v, _vector_of(model))
        sealed = [v.c.subject_ref, v.c.key_generation, v.c.version, v.c.sealed]
    return (
        sa.select(*_columns(dialect), *sealed)
        .select_from(joined)
        .where(*own, *_filters(subject, kinds))
        .limit(cap + 1)
    )


@functools.lru_cache(maxsize=64)
def vectors_statement(dialect: str, subject: bool, kinds: bool, cap: int, model: str) -> sa.Select[Any]:
    """The sealed vectors of the same scope, read the way the scope is."""
    own, _ = _branches()
    v = memory_vectors
    return (
        sa.select(v.c.memory_id, v.c.subject_ref, v.c.key_generation, v.c.version, v.c.sealed)
        .select_from(memories.join(v, _vector_of(model)))
        .where(*own, *_filters(subject, kinds))
        .limit(cap + 1)
    )


@functools.lru_cache(maxsize=4)
def postings_statement(dialect: str) -> sa.Select[Any]:
    """(term_hash, ids) of the tenant's postings of some terms, a primary-key range each:
    one row a term, its memory ids joined by commas (ids are UUIDs). A row a posting cost
    ~1 µs each to fetch and build, and a cold scope's 64-term query read some 6,900 of them
    (18 ms, against 3 for two terms); the server joins them in C."""
    p = search_postings
    # The separator as SQL text: SQLAlchemy's aggregate_strings renders it at each execution.
    join = sa.func.string_agg if dialect == "postgresql" else sa.func.group_concat
    return (
        sa.select(p.c.term_hash, join(p.c.memory_id, sa.literal_column("','")).label("ids"))
        .where(
            p.c.tenant_id == sa.bindparam("tenant", type_=sa.String),
            one_of(p.c.term_hash, "query_hashes"),
        )
        .group_by(p.c.term_hash)
    )


@functools.lru_cache(maxsize=16)
def _operator_statement(dialect: str, subject: bool, kinds: bool) -> sa.Select[Any]:
    """The operator memories of the purpose that others wrote and that match a query term:
    the few of ``ix_memories_authority``, each counting its own postings of the terms."""
    _, operator = _branches()
    p = search_postings
    hits = (
        sa.select(sa.func.count())
        .where(p.c.tenant_id == memories.c.tenant_id, p.c.memory_id == memories.c.id)
        .where(one_of(p.c.term_hash, "query_hashes"))
        .correlate(memories)
        .scalar_subquery()
    )
    m = memories.c
    return sa.select(
        m.id,
        m.token_estimate,
        m.authority,
        m.trust,
        _time_text(dialect, m.created_at).label("created_at"),
        m.confidence,
        m.subject_ref,
        m.key_generation,
        m.sealed_version,
        hits.label("hits"),
    ).where(*operator, hits > 0, *_filters(subject, kinds))


@functools.lru_cache(maxsize=32)
def _token_and_operator_statement(
    dialect: str, subject: bool, kinds: bool, confirming: bool
) -> sa.Select[Any]:
    """``_operator_statement`` with the scope's token beside each row: one row per operator
    memory, or one row without a memory (its columns NULL) when none matches. ``confirming``:
    each row also says whether the token ``token_id`` is unrevoked (``TOKEN_LIVE``)."""
    operator = _operator_statement(dialect, subject, kinds).subquery()
    token = scope_changes.token_of(
        sa.bindparam("tenant", type_=sa.String), sa.bindparam("agent"), sa.bindparam("purpose")
    )
    live = [TOKEN_LIVE] if confirming else []
    anchor = sa.select(sa.literal(1).label("one")).subquery()
    return sa.select(token.label("scope_token"), *live, *operator.c).select_from(
        anchor.outerjoin(operator, sa.true())
    )


def _vector_of(model: str) -> sa.ColumnElement[bool]:
    """The join condition of a memory and its sealed vector of ``model``."""
    v = memory_vectors
    return sa.and_(v.c.tenant_id == memories.c.tenant_id, v.c.memory_id == memories.c.id, v.c.model == model)
