"""A per-request subject reference: what an erasure request's own audit events carry.

An erasure certificate embeds the request's audit events (received and every step), each
committed by its Merkle leaf. If they carried the subject's stable ``subject_ref``, anyone
who ever saw that ref next to the subject (an agent's copy of a memory item from before
items stopped carrying it, a log line, a database copy) could link the certificate to the
person without the verification code. So events of requests filed now carry

    request_ref = hex(HMAC-SHA256(K, "lethe-request-subject/v1\\n" || request id || "\\n" || subject_ref))

with K a tenant key derived from the server's pepper (``Pseudonymizer.tenant_secret``),
never stored or handed out: the same value in every event of one request (the verifier
checks that each step concerns that one subject), a different value for every request,
and not computable from ``subject_ref`` and the request id alone.

The erasure fence still needs the stable ref, so the filing appends, next to the
``erasure.received`` event, an ``erasure.fenced`` event that carries it and no payload but
the request id (the projection raises the fence from it; ``store.projection``). That event
is never embedded in a certificate. A received event whose payload says
``"subject_scope": "request"`` raises no fence itself.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.engine import Connection

from lethe.keys.envelope import keyed_digest
from lethe.vault.custody.pseudonyms import Pseudonymizer
from lethe.vault.store.events import Event, EventLog
from lethe.vault.store.projection import ERASURE_FENCED, ERASURE_RECEIVED, REQUEST_SCOPE, SUBJECT_SCOPE, apply

_USE = "erasure-request-subject"
_DOMAIN = b"lethe-request-subject/v1\n"


def request_ref(pseudonyms: Pseudonymizer, tenant_id: str, request_id: str, subject_ref: str) -> str:
    """The per-request subject reference of ``request_id`` (module doc)."""
    key = pseudonyms.tenant_secret(tenant_id, _USE)
    return keyed_digest(key, _DOMAIN + request_id.encode() + b"\n" + subject_ref.encode())


def log_receipt(
    conn: Connection,
    log: EventLog,
    tenant_id: str,
    payload: dict[str, Any],
    subject_ref: str,
    event_ref: str,
    occurred_at: str,
) -> Event:
    """Append and apply the request's ``erasure.received`` event (under ``event_ref``) and
    the ``erasure.fenced`` event that raises the fence on ``subject_ref``; the received event."""
    received = log.append(
        conn,
        Event(
            ERASURE_RECEIVED,
            tenant_id,
            {**payload, SUBJECT_SCOPE: REQUEST_SCOPE},
            subject_ref=event_ref,
            occurred_at=occurred_at,
        ),
    )
    apply(conn, received)
    fenced = log.append(
        conn,
        Event(
            ERASURE_FENCED,
            tenant_id,
            {"request_id": payload["request_id"]},
            subject_ref=subject_ref,
            occurred_at=occurred_at,
        ),
    )
    apply(conn, fenced)  # the erasure fence: no write for this subject is accepted from now on
    return received
