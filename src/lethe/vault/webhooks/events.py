"""The events a tenant's endpoints may subscribe to, their wire document, and the outbox.

An event is written by ``record`` in the transaction that changes the request's state (the
erasure job's step, its certificate, an export, the deadline sweep), so it exists if and
only if the change committed; one delivery row per subscribed endpoint is written with it.
The event's id is the ``webhook-id`` of every delivery of it, to every endpoint, on every
retry and replay, from any worker or node: a receiver de-duplicates by it.

Payloads carry ids, statuses, counts and links only: never memory content, a subject id or
a subject reference (``WebhookEvent.from_dict`` refuses keys outside each type's list).

Exceptions: ``ValueError`` from ``WebhookEvent.from_dict`` for a document of another shape.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from lethe.vault.clock import iso, to_db
from lethe.vault.store.db import upsert_insert
from lethe.vault.store.tables import webhook_deliveries, webhook_endpoints, webhook_events

VERSION = 1
ERASURE_STATUS_CHANGED = "erasure.status_changed"
ERASURE_REPORTED = "erasure.reported"
ACCESS_EXPORT_READY = "access_export.ready"
REQUEST_DUE_SOON = "request.due_soon"
REQUEST_OVERDUE = "request.overdue"
# What each type's ``data`` may hold: ids, statuses, times, counts, links (nothing else).
FIELDS: dict[str, frozenset[str]] = {
    ERASURE_STATUS_CHANGED: frozenset({"request_id", "status", "previous_status", "completed"}),
    ERASURE_REPORTED: frozenset({"request_id", "report_id", "result", "final", "links"}),
    ACCESS_EXPORT_READY: frozenset({"export_id", "format", "items", "document_sha256"}),
    REQUEST_DUE_SOON: frozenset({"request_id", "status", "due_at"}),
    REQUEST_OVERDUE: frozenset({"request_id", "status", "due_at"}),
}
EVENT_TYPES = tuple(FIELDS)
_ID_SPACE = uuid.UUID("5b0e3f8e-2d4c-4d0a-9a59-8f1c3c6b7e21")  # ids of events named by what they are


def new_event_id() -> str:
    return f"msg_{uuid.uuid4().hex}"


def named_event_id(*parts: str) -> str:
    """The same id for the same facts (the deadline sweep's events): one event, however many
    sweeps, workers or nodes notice it."""
    return f"msg_{uuid.uuid5(_ID_SPACE, '|'.join(parts)).hex}"


@dataclass(frozen=True)
class WebhookEvent:
    """The signed body of every delivery (Standard Webhooks: ``type``, ``timestamp``, ``data``)."""

    id: str
    type: str
    timestamp: str  # when the change happened (ISO 8601, UTC); the header carries the send time
    data: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "timestamp": self.timestamp, "version": VERSION, "data": dict(self.data)}

    def body(self) -> bytes:
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":")).encode()

    @classmethod
    def from_dict(cls, event_id: str, doc: Mapping[str, Any]) -> WebhookEvent:
        kind, data = doc.get("type"), doc.get("data")
        if doc.get("version") != VERSION or kind not in FIELDS or not isinstance(data, dict):
            raise ValueError("not a Lethe webhook event of this version")
        extra = set(data) - FIELDS[kind]
        if extra:
            raise ValueError(f"fields not allowed in {kind}: {sorted(extra)}")
        return cls(event_id, kind, str(doc["timestamp"]), data)


def record(
    conn: Connection,
    tenant_id: str,
    kind: str,
    data: Mapping[str, Any],
    at: datetime,
    event_id: str | None = None,
) -> str | None:
    """Write the event and a pending delivery to each of the tenant's endpoints subscribed to
    ``kind``, in the caller's transaction; the event's id, or None if ``event_id`` was
    written before (nothing new is delivered). Tenants with no endpoint write nothing."""
    subscribed = _subscribed(conn, tenant_id, kind)
    if not subscribed:
        return None
    event = WebhookEvent.from_dict(
        event_id or new_event_id(),
        {"type": kind, "timestamp": iso(at), "version": VERSION, "data": dict(data)},
    )
    insert = upsert_insert(webhook_events, conn.dialect.name)
    stmt = (
        insert.values(
            id=event.id, tenant_id=tenant_id, type=kind, payload=event.body().decode(), created_at=to_db(at)
        )
        .on_conflict_do_nothing(index_elements=["id"])
        .returning(webhook_events.c.id)
    )
    if conn.execute(stmt).first() is None:
        return None
    for endpoint_id in subscribed:
        conn.execute(
            webhook_deliveries.insert().values(
                id=str(uuid.uuid4()),
                tenant_id=tenant_id,
                event_id=event.id,
                endpoint_id=endpoint_id,
                state="pending",
                attempts=0,
                next_attempt_at=to_db(at),
                created_at=to_db(at),
            )
        )
    return event.id


def _subscribed(conn: Connection, tenant_id: str, kind: str) -> list[str]:
    rows = conn.execute(
        sa.select(webhook_endpoints.c.id, webhook_endpoints.c.events).where(
            webhook_endpoints.c.tenant_id == tenant_id
        )
    ).all()
    return [r.id for r in rows if kind in json.loads(r.events)]


def status_changed(
    conn: Connection,
    tenant_id: str,
    request_id: str,
    status: str,
    previous: str | None,
    at: datetime,
    *,
    completed: bool = False,
) -> None:
    """``erasure.status_changed`` for a request whose status moved (nothing if it did not)."""
    if status == previous:
        return
    data = {"request_id": request_id, "status": status, "previous_status": previous, "completed": completed}
    record(conn, tenant_id, ERASURE_STATUS_CHANGED, data, at)


def reported(
    conn: Connection,
    tenant_id: str,
    request_id: str,
    report_id: str,
    certificate: bytes,
    at: datetime,
    *,
    final: bool,
) -> None:
    """``erasure.reported`` for a certificate just stored: its id, result and where to fetch
    it (paths under the server's URL; the verifier page checks it offline)."""
    result = json.loads(certificate).get("result")
    links = {
        "certificate": f"/v1/erasure-reports/{report_id}",
        "pdf": f"/v1/erasure-reports/{report_id}?format=pdf",
        "request": f"/v1/erasure-requests/{request_id}",
        "verifier": "/verify",
    }
    data = {
        "request_id": request_id,
        "report_id": report_id,
        "result": result,
        "final": final,
        "links": links,
    }
    record(conn, tenant_id, ERASURE_REPORTED, data, at)
