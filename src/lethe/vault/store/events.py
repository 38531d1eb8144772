"""The append-only event log: the source of truth, and the leaves of the audit tree.

An event's canonical bytes (RFC 8785 JSON) commit to ``ciphertext_digest`` and never
to the ciphertext, so compaction can drop dead ciphertext and the tree still verifies.
Sequence numbers are dense (1, 2, 3, ...): event ``seq`` is Merkle leaf ``seq - 1``.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from lethe.vault.canonical import canonical_json
from lethe.vault.clock import iso, utcnow
from lethe.vault.merkle import leaf_hash
from lethe.vault.store.driver_rows import insert_rows, raw_rows
from lethe.vault.store.tables import events


@dataclass(frozen=True)
class Event:
    type: str
    tenant_id: str
    payload: dict[str, Any]
    memory_id: str | None = None
    subject_ref: str | None = None
    ciphertext: bytes | None = field(default=None, repr=False)
    occurred_at: str = field(default_factory=lambda: iso(utcnow()))
    event_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    seq: int = 0
    ciphertext_digest: str | None = None

    def digest(self) -> str | None:
        if self.ciphertext_digest is not None:
            return self.ciphertext_digest
        return hashlib.sha256(self.ciphertext).hexdigest() if self.ciphertext is not None else None


def canonical_event(
    seq: int,
    event_id: str,
    type_: str,
    tenant_id: str,
    memory_id: str | None,
    subject_ref: str | None,
    occurred_at: str,
    payload: dict[str, Any],
    ciphertext_digest: str | None,
) -> bytes:
    """The exact bytes a Merkle leaf commits to."""
    return canonical_json(
        {
            "seq": seq,
            "event_id": event_id,
            "type": type_,
            "tenant_id": tenant_id,
            "memory_id": memory_id,
            "subject_ref": subject_ref,
            "occurred_at": occurred_at,
            "payload": payload,
            "ciphertext_digest": ciphertext_digest,
        }
    )


def canonical_row(row: Any) -> bytes:
    """Canonical bytes recomputed from a stored ``events`` row."""
    return canonical_event(
        row.seq,
        row.event_id,
        row.type,
        row.tenant_id,
        row.memory_id,
        row.subject_ref,
        row.occurred_at,
        json.loads(row.payload),
        row.ciphertext_digest,
    )


class EventLog(Protocol):
    """The port every command appends through, inside the transaction it passes in.

    Built once by the composition root (``SqlEventLog``) and handed to the services and
    to the functions that append inside a caller's transaction, so a test or another
    store can stand in for it. An event that cannot be appended fails the transaction:
    the audit trail fails closed.
    """

    def append(self, conn: Connection, event: Event, size: int | None = None) -> Event:
        """Append one event; returns it with its ``seq`` and ciphertext digest. ``size``:
        the log's size as the caller read it in this transaction, if it did (a caller that
        sends its inserts together, ``store.pipeline``, cannot read in between)."""
        ...

    def append_many(self, conn: Connection, batch: list[Event], size: int | None = None) -> list[Event]:
        """Append events with consecutive sequence numbers, in order (``size``: as ``append``)."""
        ...

    def size(self, conn: Connection) -> int:
        """How many events the log holds (the sequence number of the last one)."""
        ...

    def size_column(self) -> sa.ScalarSelect[int]:
        """``size`` as a column, for a caller that reads it with other things in one statement."""
        ...


class SqlEventLog:
    """``EventLog`` over the ``events`` table; appends within the caller's transaction.

    Exceptions: none of its own; a failed append (a driver error, ``StoreUnavailable``
    from the unit of work) fails the caller's transaction, so no command outlives its event.
    """

    def append(self, conn: Connection, event: Event, size: int | None = None) -> Event:
        return self.append_many(conn, [event], size)[0]

    def append_many(self, conn: Connection, batch: list[Event], size: int | None = None) -> list[Event]:
        """Append events with consecutive sequence numbers in one round trip (bulk paths)."""
        first = (self.size(conn) if size is None else size) + 1
        rows, out = [], []
        for seq, e in enumerate(batch, start=first):
            digest = e.digest()
            canon = canonical_event(
                seq,
                e.event_id,
                e.type,
                e.tenant_id,
                e.memory_id,
                e.subject_ref,
                e.occurred_at,
                e.payload,
                digest,
            )
            rows.append(
                {
                    "seq": seq,
                    "event_id": e.event_id,
                    "type": e.type,
                    "tenant_id": e.tenant_id,
                    "memory_id": e.memory_id,
                    "subject_ref": e.subject_ref,
                    "occurred_at": e.occurred_at,
                    "payload": canonical_json(e.payload).decode(),
                    "ciphertext": e.ciphertext,
                    "ciphertext_digest": digest,
                    "leaf_hash": leaf_hash(canon),
                }
            )
            out.append(
                Event(
                    e.type,
                    e.tenant_id,
                    e.payload,
                    e.memory_id,
                    e.subject_ref,
                    e.ciphertext,
                    e.occurred_at,
                    e.event_id,
                    seq,
                    digest,
                )
            )
        insert_rows(conn, events, rows)
        return out

    def size(self, conn: Connection) -> int:
        return conn.execute(_SIZE).scalar_one()

    def size_column(self) -> sa.ScalarSelect[int]:
        return _SIZE_COLUMN


_SIZE = sa.select(sa.func.coalesce(sa.func.max(events.c.seq), 0))  # built once: every append asks
_SIZE_COLUMN = _SIZE.scalar_subquery()


_READ = (
    *(events.c.type, events.c.tenant_id, events.c.payload, events.c.memory_id, events.c.subject_ref),
    *(events.c.ciphertext, events.c.occurred_at, events.c.event_id, events.c.seq, events.c.ciphertext_digest),
)  # ``Event``'s fields in order


def read_events(conn: Connection, start: int = 1, batch: int = 2000) -> Iterator[Event]:
    """The stored events in order from ``start``, fetched in batches to bound memory (replay),
    at the driver (``driver_rows``): replay reads every event."""
    seq = start
    while True:
        page = sa.select(*_READ).where(events.c.seq >= seq).order_by(events.c.seq).limit(batch)
        rows = list(raw_rows(conn, page))
        if not rows:
            return
        for t, tenant, payload, memory, subject, ciphertext, at, event_id, n, digest in rows:
            yield Event(t, tenant, json.loads(payload), memory, subject, ciphertext, at, event_id, n, digest)
        seq = n + 1  # after the page's last event
