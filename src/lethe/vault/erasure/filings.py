"""Filing once: an erasure request sent with an idempotency key, and a retry of it.

A privacy officer's client that times out after the 202 has no way of knowing whether the
request was filed; it sends it again with the same key and gets the same request back, with
the same verification code, instead of a second request with a second code. So the code,
otherwise never stored, is kept for ``WINDOW`` (24 hours) after the filing: sealed
(AES-256-GCM under a per-tenant key derived from the server's pepper, which lives in the
key directory, never in the database), bound to the tenant, the key and the request id, and
deleted after the window (by the expiry sweep, ``ErasureService.forget_expired_filings``,
and by the next keyed filing). Never in a log, an event or a certificate.

A retry is recognised by a keyed fingerprint of what was asked (subject, legal basis,
reference, identity reference): the same key with another request is a conflict. The
subject id is never stored, only inside that keyed HMAC.

Exceptions: ``IdempotencyConflict`` (409) from ``Filing.replay`` when the key was used for
another request; ``DecryptionFailed`` (a bug or a tampered row) from ``open_code``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from lethe.keys.envelope import decrypt_for_subject, encrypt_for_subject, keyed_digest
from lethe.vault.errors import IdempotencyConflict
from lethe.vault.store.tables import erasure_filings

WINDOW = timedelta(hours=24)


@dataclass(frozen=True)
class Filing:
    """A keyed filing still inside its window: which request it made, and its sealed code."""

    job_id: str
    fingerprint: str
    sealed_code: bytes


def fingerprint(
    key: bytes,
    subject_id: str,
    legal_basis: str,
    reference: str | None,
    identity_ref: str | None,
    attached: Any = None,
) -> str:
    """A keyed digest of what was asked: equal for a retry, different for another request.
    ``attached`` (the residue hunt's identifiers, as keyed term hashes) counts only when given,
    so filings without identifiers keep their fingerprints."""
    asked: list[Any] = [subject_id, legal_basis, reference, identity_ref]
    if attached is not None:
        asked.append([attached.residue, [list(t) for t in attached.term_sets]])
    body = json.dumps(asked, ensure_ascii=False)
    return keyed_digest(key, body.encode())


def _context(tenant_id: str, idempotency_key: str, job_id: str) -> bytes:
    return f"lethe erasure-filing code v1|{tenant_id}|{idempotency_key}|{job_id}".encode()


def seal_code(key: bytes, tenant_id: str, idempotency_key: str, job_id: str, code: str) -> bytes:
    return encrypt_for_subject(key, code.encode(), _context(tenant_id, idempotency_key, job_id))


def open_code(key: bytes, tenant_id: str, idempotency_key: str, filing: Filing) -> str:
    return decrypt_for_subject(
        key, filing.sealed_code, _context(tenant_id, idempotency_key, filing.job_id)
    ).decode()


def find(conn: Connection, tenant_id: str, idempotency_key: str, now: datetime) -> Filing | None:
    """The filing made with this key within its window, if any (an expired one is not a retry)."""
    row = conn.execute(
        sa.select(
            erasure_filings.c.job_id, erasure_filings.c.fingerprint, erasure_filings.c.sealed_code
        ).where(
            erasure_filings.c.tenant_id == tenant_id,
            erasure_filings.c.idempotency_key == idempotency_key,
            erasure_filings.c.expires_at > now,
        )
    ).first()
    return None if row is None else Filing(row.job_id, row.fingerprint, bytes(row.sealed_code))


def check_same(filing: Filing, fp: str) -> None:
    if filing.fingerprint != fp:
        raise IdempotencyConflict("this Idempotency-Key was already used for a different erasure request")


def record(
    conn: Connection,
    tenant_id: str,
    idempotency_key: str,
    job_id: str,
    fp: str,
    sealed_code: bytes,
    now: datetime,
) -> None:
    """Insert the filing; a concurrent filing with the same key fails on the primary key."""
    conn.execute(
        erasure_filings.insert().values(
            tenant_id=tenant_id,
            idempotency_key=idempotency_key,
            job_id=job_id,
            fingerprint=fp,
            sealed_code=sealed_code,
            filed_at=now,
            expires_at=now + WINDOW,
        )
    )


def delete_expired(conn: Connection, now: datetime) -> int:
    """Delete every filing past its window (its sealed code with it); returns how many."""
    return conn.execute(erasure_filings.delete().where(erasure_filings.c.expires_at <= now)).rowcount or 0
