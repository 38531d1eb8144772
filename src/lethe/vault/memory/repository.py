"""The SQL of memories: lookups by (tenant, id), idempotency, the search index, counts by subject,
the review queue and review decisions.

Services keep the rules (who may read what, versions, fences); these functions only say
how rows are found, counted and written, over the caller's ``Connection`` so they join
the caller's transaction. Memory ids are unique per tenant only, so every lookup by id
takes the tenant: another tenant's memory under the same id is never found.

``to_item`` is the one mapper from a ``memories`` row to a ``MemoryItem``; ``open_item``
adds the decryption every read needs before it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import datetime
from enum import Enum
from types import SimpleNamespace
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from lethe.vault.clock import from_db, to_db
from lethe.vault.custody.keyring import SubjectKeyring
from lethe.vault.custody.read_fence import FENCED
from lethe.vault.custody.sealing import open_rows, open_rows_with_keys
from lethe.vault.model import (
    Authority,
    Kind,
    MemoryItem,
    Origins,
    Provenance,
    SessionTaint,
    SourceType,
    Status,
    Trust,
)
from lethe.vault.store import driver_reads, projection
from lethe.vault.store.driver_rows import insert_rows
from lethe.vault.store.events import Event
from lethe.vault.store.in_list import one_of
from lethe.vault.store.projection import MEMORY_WRITTEN
from lethe.vault.store.tables import (
    events,
    idempotency_keys,
    memories,
    memory_vectors,
    review_decisions,
    search_index,
    search_postings,
    subject_keys,
)

Row = Any  # a row of ``memories`` (attribute access by column name)
E = TypeVar("E", bound=Enum)


# A member by its stored value: ``Kind(value)`` goes through the enum's metaclass (~2 µs on a
# CI machine, six a mapped row); a dict lookup is ~0.1. Anything else (a member, an unknown
# value) takes the enum's own path, which also raises for an unknown value as before.
_MEMBERS: dict[type[Enum], dict[Any, Any]] = {
    e: {m.value: m for m in e} for e in (Kind, Authority, Trust, Status, SourceType)
}


def _member(enum: type[E], value: Any) -> E:
    found = _MEMBERS[enum].get(value) if type(value) is str else None
    return found if found is not None else enum(value)


def provenance_of(text: str, origin: dict[str, str] | None = None) -> Provenance:
    """The provenance of a row's clear part (``Provenance.clear_part``) and its opened origin
    (``custody.sealing.Opened.origin``). A row written before origins were sealed still holds
    its ``source_ref`` in clear; an unopened row's origin fields are None."""
    p = json.loads(text)
    o = origin or {}
    origins = Origins.from_dict(p["origins"]) if "origins" in p else None
    return Provenance(
        _member(SourceType, p["source_type"]),
        o.get("source_ref", p.get("source_ref")),
        tuple(p.get("sources") or ()),
        turn=o.get("turn"),
        tool=o.get("tool"),
        url=o.get("url"),
        document_ref=o.get("document_ref"),
        origins=origins,
    )


def to_item(
    row: Row,
    subject_id: str | None,
    content: str | None,
    origin: dict[str, str] | None = None,
    score: dict[str, float] | None = None,
) -> MemoryItem:
    """The domain object of a ``memories`` row; subject id, content and origin as opened (or None)."""
    return MemoryItem(
        id=row.id,
        tenant_id=row.tenant_id,
        agent_id=row.agent_id,
        subject_ref=row.subject_ref,
        subject_id=subject_id,
        purpose=row.purpose,
        kind=_member(Kind, row.kind),
        content=content,
        content_hmac=row.content_hmac,
        provenance=provenance_of(row.provenance, origin),
        authority=_member(Authority, row.authority),
        trust=_member(Trust, row.trust),
        confidence=row.confidence,
        created_at=from_db(row.created_at),
        expires_at=from_db(row.expires_at),
        version=row.version,
        status=_member(Status, row.status),
        supersedes_id=row.supersedes_id,
        idempotency_key=row.idempotency_key,
        score=score,
        session_taint=_session_taint(getattr(row, "session_taint", None)),
    )


def _session_taint(text: str | None) -> SessionTaint | None:
    """The stored cause of a tainted session's write (None for nearly every memory)."""
    return None if text is None else SessionTaint.from_json(text)


def written_item(e: Event, subject_id: str, content: str, origin: dict[str, str]) -> MemoryItem:
    """The item a ``memory.written`` event just left, mapped from the event as ``to_item``
    maps the row (``projection.written_memory``): a write answers without reading it back."""
    return to_item(SimpleNamespace(**projection.written_memory(e)), subject_id, content, origin)


def open_item(conn: Connection, keyring: SubjectKeyring, row: Row) -> MemoryItem | None:
    """The row decrypted and mapped, or None when its key is gone or its bytes do not open."""
    opened = open_rows(conn, keyring, [row]).get((row.tenant_id, row.id))
    return to_item(row, *opened) if opened is not None else None


def open_item_with_key(keyring: SubjectKeyring, row: Row) -> MemoryItem | None:
    """``open_item`` for a row read with its key row (``by_id_with_key``)."""
    opened = open_rows_with_keys(keyring, [row]).get((row.tenant_id, row.id))
    return to_item(row, *opened) if opened is not None else None


# -- lookups -----------------------------------------------------------------------------


# The write path's lookups, built once (building a statement costs more than running it).
_BY_ID = sa.select(memories).where(
    memories.c.tenant_id == sa.bindparam("tenant_id"), memories.c.id == sa.bindparam("memory_id")
)
_OF_IDS = (  # the tenant's memories under some ids
    memories.c.tenant_id == sa.bindparam("tenant_id"),
    one_of(memories.c.id, "memory_ids"),
)
_BY_IDS = sa.select(memories).where(*_OF_IDS)
# The hot reads (get, a search's results) take each memory's key row in the same statement
# (``custody.sealing.open_rows_with_keys``): key_name, wrapped_dek and key_state, all None
# where the row has no key row.
_BY_IDS_WITH_KEYS = (
    sa.select(
        memories,
        subject_keys.c.key_name,
        subject_keys.c.wrapped_dek,
        subject_keys.c.state.label("key_state"),
    )
    .select_from(
        memories.outerjoin(
            subject_keys,
            sa.and_(
                subject_keys.c.tenant_id == memories.c.tenant_id,
                subject_keys.c.subject_ref == memories.c.subject_ref,
                subject_keys.c.generation == memories.c.key_generation,
            ),
        )
    )
    .where(*_OF_IDS)
    .add_columns(FENCED)  # agents' reads skip a subject whose erasure was accepted
)
_OF_KEY = (
    idempotency_keys.c.tenant_id == sa.bindparam("tenant_id"),
    idempotency_keys.c.agent_id == sa.bindparam("agent_id"),
    idempotency_keys.c.key == sa.bindparam("key"),
)
_PRIOR_WRITE = sa.select(idempotency_keys).where(*_OF_KEY)
# The request hash and memory of an earlier write under the key (NULLs if none), as columns a
# writer reads with its other checks; parameters tenant_id, agent_id, key.
PRIOR_WRITE_COLUMNS = tuple(
    sa.select(c).where(*_OF_KEY).scalar_subquery()
    for c in (idempotency_keys.c.request_hash, idempotency_keys.c.memory_id)
)


def by_id(conn: Connection, tenant_id: str, memory_id: str) -> Row | None:
    """The tenant's memory under this id (ids are unique within a tenant, not across tenants)."""
    return conn.execute(_BY_ID, {"tenant_id": tenant_id, "memory_id": memory_id}).first()


def by_id_with_key(conn: Connection, tenant_id: str, memory_id: str) -> Row | None:
    """``by_id`` with the memory's key row (for ``open_item_with_key``)."""
    return by_ids_with_keys(conn, tenant_id, [memory_id]).get(memory_id)


def by_ids_with_keys(conn: Connection, tenant_id: str, memory_ids: Sequence[str]) -> dict[str, Row]:
    """``by_ids`` with each memory's key row (for ``custody.sealing.open_rows_with_keys``), for
    agents' reads: a memory of a subject whose erasure was accepted is not among them
    (``custody.read_fence``)."""
    if not memory_ids:
        return {}
    params = {"tenant_id": tenant_id, "memory_ids": list(memory_ids)}
    # As named tuples: each is opened and mapped to an item, by some 30 attributes (``store.records``).
    return {r.id: r for r in driver_reads.rows(conn, _BY_IDS_WITH_KEYS, params) if not r.fenced}


def by_ids(conn: Connection, tenant_id: str, memory_ids: Sequence[str]) -> dict[str, Row]:
    """The tenant's memories under these ids, keyed by id."""
    if not memory_ids:
        return {}
    return {r.id: r for r in conn.execute(_BY_IDS, {"tenant_id": tenant_id, "memory_ids": list(memory_ids)})}


def prior_write(conn: Connection, tenant_id: str, agent_id: str, idempotency_key: str) -> Row | None:
    """The ``idempotency_keys`` row of an earlier write under this key, if any."""
    return conn.execute(
        _PRIOR_WRITE, {"tenant_id": tenant_id, "agent_id": agent_id, "key": idempotency_key}
    ).first()


def live_past_expiry(
    conn: Connection, now: datetime, limit: int, among: Sequence[tuple[str, str]] | None = None
) -> list[Row]:
    """Up to ``limit`` active or quarantined memories whose expiry has passed (any tenant), with
    their scope; ``among``: only these (tenant id, memory id) keys, read by primary key.

    Without ``among`` it scans every memory (no index leads with the expiry: one would cost
    every write), about 60 ms per 100,000 memories on SQLite."""
    q = sa.select(
        memories.c.id,
        memories.c.tenant_id,
        memories.c.subject_ref,
        memories.c.version,
        memories.c.agent_id,
        memories.c.purpose,
        memories.c.authority,
    ).where(
        memories.c.status.in_((Status.ACTIVE.value, Status.QUARANTINED.value)),
        memories.c.expires_at <= to_db(now),
    )
    if among is not None:
        q = q.where(sa.tuple_(memories.c.tenant_id, memories.c.id).in_(among))
    return list(conn.execute(q.limit(limit)).all())


def ids_of_subject(conn: Connection, tenant_id: str, subject_ref: str) -> set[str]:
    """Every memory id of the subject, whatever its status."""
    q = sa.select(memories.c.id).where(
        memories.c.tenant_id == tenant_id, memories.c.subject_ref == subject_ref
    )
    return set(conn.execute(q).scalars())


_BRIEF = (memories.c.id, memories.c.provenance, memories.c.version, memories.c.subject_ref, memories.c.status)


def provenance_is(field: str, value: str) -> sa.ColumnElement[bool]:
    """The stored provenance JSON has ``field`` equal to ``value`` (a LIKE on its text).

    The column is ``json.dumps(..., sort_keys=True)`` with the default separators, so the
    fragment ``"field": "value"`` occurs only as that key with that whole value: quotes
    inside any string are escaped. SQLite's LIKE ignores ASCII case, so a caller that
    must match a free-text value exactly checks the parsed value too (``from_source``).
    """
    return memories.c.provenance.contains(f'"{field}": {json.dumps(value)}', autoescape=True)


_ANY_STATUS = [s.value for s in Status]


def summaries(
    conn: Connection,
    tenant_id: str,
    purpose: str | None = None,
    agent_id: str | None = None,
    after_seq: int | None = None,
) -> list[Row]:
    """The tenant's summaries in any status (id, provenance, version, subject_ref, status);
    ``purpose`` and ``agent_id``, if given, narrow them to that scope (an index range);
    ``after_seq``, to those created after that event (``ix_memories_review``: one range per
    status), so the walk from a recent memory reads what was written since, not the tenant."""
    q = sa.select(*_BRIEF).where(
        memories.c.tenant_id == tenant_id, provenance_is("source_type", SourceType.SUMMARY.value)
    )
    if purpose is not None:
        q = q.where(memories.c.purpose == purpose)
    if agent_id is not None:
        q = q.where(memories.c.agent_id == agent_id)
    if after_seq is not None:
        q = q.where(memories.c.status.in_(_ANY_STATUS), memories.c.created_seq > after_seq)
    return list(conn.execute(q).all())


def from_source(conn: Connection, tenant_id: str, source_ref: str, source_hash: str) -> list[Row]:
    """The tenant's memories written from ``source_ref``, by id: those whose index row holds
    its keyed hash (``Pseudonymizer.source_hash``; the value itself is sealed), so live or
    quarantined ones, and any memory written before sources were sealed, whose row still
    names it in clear, in any status."""
    indexed = sa.select(search_postings.c.memory_id).where(
        search_postings.c.tenant_id == tenant_id, search_postings.c.term_hash == source_hash
    )
    q = sa.select(*_BRIEF).where(
        memories.c.tenant_id == tenant_id,
        sa.or_(memories.c.id.in_(indexed), provenance_is("source_ref", source_ref)),
    )
    rows = conn.execute(q.order_by(memories.c.id)).all()
    return [r for r in rows if json.loads(r.provenance).get("source_ref", source_ref) == source_ref]


# -- counts by subject (erasure evidence) ---------------------------------------------------


def _of_subject(tenant_id: str, subject_ref: str) -> tuple[sa.ColumnElement[bool], ...]:
    return (memories.c.tenant_id == tenant_id, memories.c.subject_ref == subject_ref)


def count_unforgotten(conn: Connection, tenant_id: str, subject_ref: str) -> int:
    """The subject's memories in any status but ``forgotten``."""
    q = sa.select(sa.func.count()).where(
        *_of_subject(tenant_id, subject_ref), memories.c.status != Status.FORGOTTEN.value
    )
    return conn.execute(q.select_from(memories)).scalar_one()


def has_unforgotten(conn: Connection, tenant_id: str, subject_ref: str) -> bool:
    """Whether any memory of the subject is not ``forgotten`` (stops at the first)."""
    q = sa.select(memories.c.id).where(
        *_of_subject(tenant_id, subject_ref), memories.c.status != Status.FORGOTTEN.value
    )
    return conn.execute(q.limit(1)).first() is not None


def count_with_ciphertext(conn: Connection, tenant_id: str, subject_ref: str) -> int:
    """The subject's projection rows that still hold ciphertext."""
    q = sa.select(sa.func.count()).where(
        *_of_subject(tenant_id, subject_ref), memories.c.ciphertext.is_not(None)
    )
    return conn.execute(q.select_from(memories)).scalar_one()


# -- the search index ---------------------------------------------------------------------


def count_index(
    conn: Connection, tenant_id: str, subject_ref: str | None = None, memory_ids: Iterable[str] = ()
) -> int:
    """The tenant's index entries of the subject, or of these memories, or of either."""
    return _count_of(conn, search_index, tenant_id, subject_ref, memory_ids)


def _count_of(
    conn: Connection, table: sa.Table, tenant_id: str, subject_ref: str | None, memory_ids: Iterable[str]
) -> int:
    """How many rows ``_derived_of`` selects (0 when it selects none)."""
    where = _derived_of(table, tenant_id, subject_ref, memory_ids)
    if where is None:
        return 0
    return conn.execute(sa.select(sa.func.count()).select_from(table).where(where)).scalar_one()


def _derived_of(
    table: sa.Table, tenant_id: str, subject_ref: str | None, memory_ids: Iterable[str]
) -> sa.ColumnElement[bool] | None:
    """The tenant's rows of a table derived per memory (index entries, vectors) of the
    subject, or of these memories, or of either; None if neither is given (no rows)."""
    ids = list(memory_ids)
    conds = []
    if subject_ref is not None:
        conds.append(table.c.subject_ref == subject_ref)
    if ids:
        conds.append(table.c.memory_id.in_(ids))
    return sa.and_(table.c.tenant_id == tenant_id, sa.or_(*conds)) if conds else None


def index_row(tenant_id: str, subject_ref: str, memory_id: str, terms: Iterable[str]) -> dict[str, str]:
    """The ``search_index`` row of a memory: its term hashes, space-separated and sorted."""
    return {
        "memory_id": memory_id,
        "tenant_id": tenant_id,
        "subject_ref": subject_ref,
        "terms": " ".join(sorted(terms)),
    }


def add_index_rows(conn: Connection, rows: list[dict[str, str]]) -> None:
    """Index memories: each one's ``search_index`` row and one posting per term hash."""
    insert_rows(conn, search_index, rows)
    postings = [
        {"tenant_id": r["tenant_id"], "term_hash": h, "memory_id": r["memory_id"]}
        for r in rows
        for h in r["terms"].split()
    ]
    insert_rows(conn, search_postings, postings)


def add_vectors(conn: Connection, rows: list[dict[str, object]]) -> None:
    """Store sealed vectors (``memory_vectors`` rows; sealed by ``custody.sealing.seal_vector``)."""
    insert_rows(conn, memory_vectors, rows)


def count_vectors(
    conn: Connection, tenant_id: str, subject_ref: str | None = None, memory_ids: Iterable[str] = ()
) -> int:
    """The tenant's sealed vectors of the subject, or of these memories, or of either."""
    return _count_of(conn, memory_vectors, tenant_id, subject_ref, memory_ids)


def sealed_vectors(
    conn: Connection, tenant_id: str, subject_ref: str | None = None, memory_ids: Iterable[str] = ()
) -> list[bytes]:
    """The sealed bytes of the subject's vectors, or of these memories' (for a byte scan)."""
    where = _derived_of(memory_vectors, tenant_id, subject_ref, memory_ids)
    if where is None:
        return []
    return list(conn.execute(sa.select(memory_vectors.c.sealed).where(where)).scalars())


def drop_all_index_entries(conn: Connection, vectors: bool = True) -> None:
    """Empty the index (a rebuild writes it again); its sealed vectors too unless told not to."""
    if vectors:
        conn.execute(memory_vectors.delete())
    conn.execute(search_postings.delete())
    conn.execute(search_index.delete())


drop_index_entry = projection.drop_index_entry


# -- review -------------------------------------------------------------------------------


def review_page(
    conn: Connection,
    tenant_id: str,
    filters: Sequence[sa.ColumnElement[bool]],
    after_seq: int,
    now: datetime,
    limit: int,
) -> list[Row]:
    """Up to ``limit`` of the tenant's live quarantined memories created after ``after_seq``, in
    creation order (``created_seq``: assigned under the write lock, so nothing new sorts earlier)."""
    q = sa.select(memories).where(
        memories.c.tenant_id == tenant_id,
        memories.c.status == Status.QUARANTINED.value,
        memories.c.expires_at > to_db(now),
        memories.c.created_seq > after_seq,
        *filters,
    )
    return list(conn.execute(q.order_by(memories.c.created_seq).limit(limit)).all())


def decision(conn: Connection, tenant_id: str, principal: str, key: str) -> Row | None:
    """The review decision an earlier promote or reject recorded under this idempotency key."""
    return conn.execute(
        sa.select(review_decisions).where(
            review_decisions.c.tenant_id == tenant_id,
            review_decisions.c.principal == principal,
            review_decisions.c.key == key,
        )
    ).first()


def written_ciphertext(conn: Connection, tenant_id: str, memory_id: str, version: int) -> bytes | None:
    """The ciphertext the memory was written with at ``version``, if the log still holds it."""
    q = sa.select(events.c.payload, events.c.ciphertext).where(
        events.c.tenant_id == tenant_id,
        events.c.memory_id == memory_id,
        events.c.type == MEMORY_WRITTEN,
        events.c.ciphertext.is_not(None),
    )
    for payload, ciphertext in conn.execute(q):
        if json.loads(payload)["version"] == version:
            return ciphertext
    return None
