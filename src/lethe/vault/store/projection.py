"""Applies events to the projection tables. The one place state changes.

Commands append an event and apply it here in the same transaction; ``replay`` applies
the same events to an empty schema. Because both go through ``apply``, replay
reproduces the live state by construction, and the compare-and-swap in each update
(``WHERE version = :previous``) is what turns a lost race into a ``VersionConflict``.
A memory is addressed by (tenant, id): two tenants may hold the same id. Every change to a
memory also gives its scope a new change token (``store.scope_changes``).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from lethe.vault.clock import db_time, iso
from lethe.vault.errors import VersionConflict
from lethe.vault.model import GONE
from lethe.vault.store import scope_changes
from lethe.vault.store.driver_rows import insert_rows, time_as_stored
from lethe.vault.store.events import Event
from lethe.vault.store.tables import (
    forgotten_subjects,
    idempotency_keys,
    memories,
    memory_vectors,
    retractions,
    review_decisions,
    search_index,
)

MEMORY_WRITTEN = "memory.written"
MEMORY_PROMOTED = "memory.promoted"
MEMORY_SUPERSEDED = "memory.superseded"
MEMORY_EXPIRED = "memory.expired"
MEMORY_RETENTION_CONFIRMED = "memory.retention_confirmed"
MEMORY_TOMBSTONED = "memory.tombstoned"
MEMORY_RETRACTED = "memory.retracted"
# An erasure's residue hunt queued another subject's memory for a reviewer (``erasure.residue``)
MEMORY_QUEUED = "memory.queued_for_review"
RETRACTION_RECORDED = "retraction.recorded"
SUBJECT_FORGOTTEN = "subject.forgotten"
SUBJECT_REINSTATED = "subject.reinstated"
ERASURE_RECEIVED = "erasure.received"
# The fence of a request whose received event carries a per-request subject reference
# (``erasure.request_ref``): the stable ref, and the request id, nothing else.
ERASURE_FENCED = "erasure.fenced"
SUBJECT_SCOPE, REQUEST_SCOPE = "subject_scope", "request"  # a received event's payload marker

_GONE = sorted(s.value for s in GONE)  # retracted or forgotten: no write or transition brings it back


def _cas(conn: Connection, e: Event, previous: int, values: dict, *extra: sa.ColumnElement) -> None:
    """Update the event's memory (its tenant's, by id) only if it is still at ``previous``."""
    result = conn.execute(
        memories.update()
        .where(
            memories.c.tenant_id == e.tenant_id,
            memories.c.id == e.memory_id,
            memories.c.version == previous,
            *extra,
        )
        .values(**values)
    )
    if result.rowcount != 1:
        raise VersionConflict("the memory changed since the expected version")


_PROVENANCE = json.JSONEncoder(sort_keys=True)  # as ``json.dumps(..., sort_keys=True)``, built once


def _written_rows(e: Event, time: Callable[[str], Any] = db_time) -> tuple[dict, dict]:
    """The projection row and idempotency row a ``memory.written`` event produces; ``time``
    turns the event's timestamps into column values (``driver_rows.time_as_stored``)."""
    p = e.payload
    row = {
        "tenant_id": e.tenant_id,
        "agent_id": p["agent_id"],
        "subject_ref": e.subject_ref,
        "purpose": p["purpose"],
        "kind": p["kind"],
        "ciphertext": e.ciphertext,
        "sealed_version": p["version"],
        "key_generation": p["key_generation"],
        "content_hmac": p["content_hmac"],
        "token_estimate": p["token_estimate"],
        "provenance": _PROVENANCE.encode(p["provenance"]),
        "authority": p["authority"],
        "trust": p["trust"],
        "confidence": p["confidence"],
        "updated_at": time(e.occurred_at),
        "expires_at": time(p["expires_at"]),
        "version": p["version"],
        "status": p["status"],
        "supersedes_id": p["supersedes_id"],
        "idempotency_key": p["idempotency_key"],
        # Only a tainted session's write carries it (``memory.agent_sessions``).
        "session_taint": _taint_text(p.get("session_taint")),
    }
    idem = {
        "tenant_id": e.tenant_id,
        "agent_id": p["agent_id"],
        "key": p["idempotency_key"],
        "request_hash": p["request_hash"],
        "memory_id": e.memory_id,
        "version": p["version"],
    }
    return row, idem


def _taint_text(taint: dict | None) -> str | None:
    return None if taint is None else _PROVENANCE.encode(taint)


def _created_row(e: Event, row: dict, time: Callable[[str], Any] = db_time) -> dict:
    return {
        **row,
        "id": e.memory_id,
        "created_at": time(e.payload["created_at"]),
        "superseded_by": None,
        "created_seq": e.seq,
    }


def written_memory(e: Event) -> dict[str, Any]:
    """The ``memories`` row a ``memory.written`` event leaves, as its columns hold it: what
    an update does not change (id, creation time) the event carries too, so the writer
    answers from it without reading the row back."""
    row, _ = _written_rows(e)
    created_at = db_time(e.payload["created_at"])
    return {**row, "id": e.memory_id, "created_at": created_at, "confidence": float(row["confidence"])}


def _written(conn: Connection, e: Event) -> None:
    row, idem = _written_rows(e)
    if e.payload["version"] == 1:
        insert_rows(conn, memories, [_created_row(e, row)])
    else:
        _cas(conn, e, e.payload["version"] - 1, row, memories.c.status.not_in(_GONE))
    insert_rows(conn, idempotency_keys, [idem])
    scope_changes.written(conn, [_scope_token(e)])  # an update keeps its agent and purpose: one scope


def _scope_token(e: Event) -> dict[str, str]:
    """The scope a ``memory.written`` event writes to, with the event's id as its new token."""
    return {
        "tenant_id": e.tenant_id,
        "agent_id": e.payload["agent_id"],
        "purpose": e.payload["purpose"],
        "token": e.event_id,
    }


def _transition(conn: Connection, e: Event, status: str, *guard: sa.ColumnElement, **extra: object) -> None:
    """A status change: compare-and-swap on the previous version, bump it, stamp the time."""
    v = e.payload["version"]
    values = {"version": v, "status": status, "updated_at": db_time(e.occurred_at), **extra}
    _cas(conn, e, v - 1, values, *guard)
    scope_changes.memory_changed(conn, e.tenant_id, e.memory_id, e.event_id)


# The item fields a review decision keeps (its first result); content is opened again when asked.
_DECISION_FIELDS = (
    "id",
    "tenant_id",
    "agent_id",
    "subject_ref",
    "purpose",
    "kind",
    "content_hmac",
    "provenance",
    "authority",
    "trust",
    "confidence",
    "created_at",
    "expires_at",
    "version",
    "status",
    "supersedes_id",
    "idempotency_key",
)


def _record_decision(conn: Connection, e: Event, action: str, principal: str) -> None:
    """A promote or reject sent with an idempotency key keeps its result for retries."""
    key = e.payload.get("idempotency_key")
    if key is None:
        return
    row = conn.execute(
        sa.select(memories).where(memories.c.tenant_id == e.tenant_id, memories.c.id == e.memory_id)
    ).one()
    result = {
        f: iso(v) if isinstance(v, datetime) else v for f in _DECISION_FIELDS for v in [row._mapping[f]]
    }
    conn.execute(
        review_decisions.insert().values(
            tenant_id=e.tenant_id,
            principal=principal,
            key=key,
            request_hash=e.payload["request_hash"],
            action=action,
            memory_id=e.memory_id,
            result=json.dumps(result, sort_keys=True),
            sealed_version=row.sealed_version,
            key_generation=row.key_generation,
            decided_at=e.occurred_at,
        )
    )


def _promoted(conn: Connection, e: Event) -> None:
    _transition(conn, e, "active", memories.c.status == "quarantined", trust=e.payload["trust"])
    _record_decision(conn, e, "promote", e.payload["promoted_by"])


def _queued(conn: Connection, e: Event) -> None:
    """Back to the review queue (it leaves retrieval, stays indexed) until a reviewer decides."""
    _transition(conn, e, "quarantined", memories.c.status.in_(("active", "quarantined")))


def _superseded(conn: Connection, e: Event) -> None:
    """Superseded for good: it leaves the index (only active and quarantined memories are in it)."""
    _transition(
        conn, e, "superseded", memories.c.status == "active", superseded_by=e.payload["superseded_by"]
    )
    _drop_index_entry(conn, e)


def _expired(conn: Connection, e: Event) -> None:
    """Expired for good: it leaves the index too."""
    _transition(conn, e, "expired", memories.c.status.in_(("active", "quarantined")))
    _drop_index_entry(conn, e)


def _retention_confirmed(conn: Connection, e: Event) -> None:
    """A reviewer kept an active memory longer (``memory.retention``)."""
    _transition(conn, e, "active", memories.c.status == "active", expires_at=db_time(e.payload["expires_at"]))


def _tombstoned(conn: Connection, e: Event) -> None:
    """A derived artifact (a summary built from a forgotten memory) is forgotten too."""
    _transition(conn, e, "forgotten", ciphertext=None)
    _drop_index_entry(conn, e)


def _drop_index_entry(conn: Connection, e: Event) -> None:
    drop_index_entry(conn, e.tenant_id, e.memory_id)


def drop_index_entry(conn: Connection, tenant_id: str, memory_id: str) -> None:
    """Take one memory out of the derived search index: its postings, sealed vector and row."""
    _drop_derived(conn, "memory_id", tenant_id, memory_id)


def drop_subject_index(conn: Connection, tenant_id: str, subject_ref: str) -> None:
    """Take all of a subject's memories out of the derived search index, vectors included."""
    _drop_derived(conn, "subject_ref", tenant_id, subject_ref)


def _drop_derived(conn: Connection, column: str, tenant_id: str, key: str) -> None:
    """The sealed vectors, postings and index rows of one memory or one subject (``column``
    is ``memory_id`` or ``subject_ref``); the postings before the index rows they are found by."""
    v, ix = memory_vectors, search_index
    conn.execute(v.delete().where(v.c.tenant_id == tenant_id, v.c[column] == key))
    _drop_postings(conn, column, tenant_id, key)
    conn.execute(ix.delete().where(ix.c.tenant_id == tenant_id, ix.c[column] == key))


# The postings of the search_index rows with ``tenant_id`` and {column} = :key, deleted by
# primary key: the keys are each row's memory id with each term hash its (space-separated)
# ``terms`` lists, split in SQL, so a subject's postings go in one statement without a round
# trip of their keys. SQLite iterates the keys sorted (its IN list is a B-tree), so the
# postings' pages are visited in turn.
_DROP_POSTINGS = {
    "sqlite": """
WITH RECURSIVE split(memory_id, term_hash, rest) AS (
    SELECT memory_id, NULL, terms || ' ' FROM search_index WHERE tenant_id = :tenant_id AND {column} = :key
    UNION ALL
    SELECT memory_id, substr(rest, 1, instr(rest, ' ') - 1), substr(rest, instr(rest, ' ') + 1)
    FROM split WHERE rest <> ''
)
DELETE FROM search_postings WHERE tenant_id = :tenant_id
    AND (term_hash, memory_id) IN (SELECT term_hash, memory_id FROM split WHERE term_hash <> '')
""",
    "postgresql": """
DELETE FROM search_postings AS p
USING search_index AS i, unnest(string_to_array(i.terms, ' ')) AS t(term_hash)
WHERE i.tenant_id = :tenant_id AND i.{column} = :key
    AND p.tenant_id = i.tenant_id AND p.memory_id = i.memory_id AND p.term_hash = t.term_hash
""",
}


@functools.cache
def _drop_postings_statement(dialect: str, column: str) -> sa.TextClause:
    return sa.text(_DROP_POSTINGS[dialect].format(column=column))


def _drop_postings(conn: Connection, column: str, tenant_id: str, key: str) -> None:
    """Delete the postings of the ``search_index`` rows of one memory or one subject (``column``
    is ``memory_id`` or ``subject_ref``): the table has no index by memory (``tables.search_postings``)."""
    conn.execute(_drop_postings_statement(conn.dialect.name, column), {"tenant_id": tenant_id, "key": key})


def _retracted(conn: Connection, e: Event) -> None:
    """One memory retracted (itself, or as a summary citing a retracted one): out of retrieval now."""
    _transition(conn, e, "retracted", memories.c.status.not_in(_GONE), ciphertext=None)
    _drop_index_entry(conn, e)
    if "retracted_by" in e.payload:
        _record_decision(conn, e, "reject", e.payload["retracted_by"])


def _retraction_recorded(conn: Connection, e: Event) -> None:
    """The ledger entry of a retraction (a backup restore re-applies the ledger)."""
    p = e.payload
    conn.execute(
        retractions.insert().values(
            id=p["retraction_id"],
            tenant_id=e.tenant_id,
            requested_by=p["requested_by"],
            reason=p["reason"],
            memory_id=p.get("memory_id"),
            source_ref=p.get("source_ref"),  # events recorded before sources were hashed
            source_hash=p.get("source_hash"),
            memory_ids=json.dumps(p["memory_ids"]),
            derived_ids=json.dumps(p["derived_ids"]),
            retracted_at=p["retracted_at"],
            event_seq=e.seq,
        )
    )


def _forgotten(conn: Connection, e: Event) -> None:
    scope = (memories.c.tenant_id == e.tenant_id, memories.c.subject_ref == e.subject_ref)
    conn.execute(
        memories.update()
        .where(*scope, memories.c.status != "forgotten")
        .values(
            status="forgotten",
            ciphertext=None,
            version=memories.c.version + 1,
            updated_at=db_time(e.occurred_at),
        )
    )
    # Forgotten items that lost their ciphertext earlier still must not keep any.
    conn.execute(memories.update().where(*scope, memories.c.ciphertext.is_not(None)).values(ciphertext=None))
    scope_changes.tenant_changed(conn, e.tenant_id, e.event_id)
    drop_subject_index(conn, e.tenant_id, e.subject_ref)
    conn.execute(
        forgotten_subjects.delete().where(
            forgotten_subjects.c.tenant_id == e.tenant_id, forgotten_subjects.c.subject_ref == e.subject_ref
        )
    )
    conn.execute(
        forgotten_subjects.insert().values(
            tenant_id=e.tenant_id,
            subject_ref=e.subject_ref,
            forgotten_at=e.occurred_at,
            # -1 for a subject that never had a key: 0 means "accepted, not yet tombstoned",
            # the rows every scope read leaves out (``custody.read_fence.pending``).
            generation=e.payload["generation"] or -1,
            request_id=e.payload.get("request_id"),
        )
    )


def _erasure_received(conn: Connection, e: Event) -> None:
    """The erasure fence goes up when the request is accepted, not when the job first runs:
    for writes and for reads (``custody.read_fence``). Every scope of the tenant gets a new
    change token, so no process serves the subject from a scope, vectors or results it keeps.
    A received event under a per-request reference leaves it to its ``erasure.fenced`` event."""
    if e.payload.get(SUBJECT_SCOPE) == REQUEST_SCOPE:
        return
    _fence(conn, e)


def _fence(conn: Connection, e: Event) -> None:
    scope_changes.tenant_changed(conn, e.tenant_id, e.event_id)
    fenced = conn.execute(
        sa.select(forgotten_subjects.c.tenant_id).where(
            forgotten_subjects.c.tenant_id == e.tenant_id, forgotten_subjects.c.subject_ref == e.subject_ref
        )
    ).first()
    if fenced is None:
        conn.execute(
            forgotten_subjects.insert().values(
                tenant_id=e.tenant_id,
                subject_ref=e.subject_ref,
                forgotten_at=e.occurred_at,
                generation=0,
                request_id=e.payload.get("request_id"),
            )
        )


def _reinstated(conn: Connection, e: Event) -> None:
    """The fence comes down, for reads as for writes; kept scopes are read again."""
    scope_changes.tenant_changed(conn, e.tenant_id, e.event_id)
    conn.execute(
        forgotten_subjects.delete().where(
            forgotten_subjects.c.tenant_id == e.tenant_id, forgotten_subjects.c.subject_ref == e.subject_ref
        )
    )


_HANDLERS: dict[str, Callable[[Connection, Event], None]] = {
    MEMORY_WRITTEN: _written,
    MEMORY_PROMOTED: _promoted,
    MEMORY_QUEUED: _queued,
    MEMORY_SUPERSEDED: _superseded,
    MEMORY_EXPIRED: _expired,
    MEMORY_RETENTION_CONFIRMED: _retention_confirmed,
    MEMORY_TOMBSTONED: _tombstoned,
    MEMORY_RETRACTED: _retracted,
    RETRACTION_RECORDED: _retraction_recorded,
    SUBJECT_FORGOTTEN: _forgotten,
    SUBJECT_REINSTATED: _reinstated,
    ERASURE_RECEIVED: _erasure_received,
    ERASURE_FENCED: _fence,
}


_TIMESTAMPS = ("created_at", "updated_at", "expires_at")  # the ``memories`` columns a write dates


def apply_many(conn: Connection, batch: list[Event]) -> None:
    """Apply events in order; runs of new-memory events become one bulk insert each, at the
    driver (``driver_rows``): replay and imports insert every memory there."""
    run: list[Event] = []

    as_stored = time_as_stored(conn.dialect)
    time, stored = (as_stored, _TIMESTAMPS) if as_stored else (db_time, ())

    def flush() -> None:
        if run:
            pairs = [(_created_row(e, r, time), i) for e in run for r, i in [_written_rows(e, time)]]
            insert_rows(conn, memories, [p[0] for p in pairs], stored)
            insert_rows(conn, idempotency_keys, [p[1] for p in pairs])
            newest = {(e.tenant_id, e.payload["agent_id"], e.payload["purpose"]): e for e in run}
            scope_changes.written(conn, [_scope_token(e) for e in newest.values()])
            run.clear()

    for e in batch:
        if e.type == MEMORY_WRITTEN and e.payload["version"] == 1:
            run.append(e)
        else:
            flush()
            apply(conn, e)
    flush()


def apply(conn: Connection, event: Event) -> None:
    """Apply one event; events without projection effects (audit-only) are ignored."""
    handler = _HANDLERS.get(event.type)
    if handler is not None:
        handler(conn, event)
