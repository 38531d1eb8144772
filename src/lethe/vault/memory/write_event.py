"""A memory write's pieces between admission and the store: what was admitted
(``PreparedWrite``), where it lands (``Target``), the ``memory.written`` event it appends
(content sealed, the payload's commitments), and the request hash an idempotent retry is
compared by. Pure: no statement runs here (``memory.service`` runs the write).
"""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import dataclass, replace
from datetime import datetime

from lethe.keys.envelope import content_commitment, derive_key
from lethe.vault.canonical import canonical_json
from lethe.vault.clock import iso
from lethe.vault.custody.keyring import SubjectKey
from lethe.vault.custody.sealing import origin_commitment, seal
from lethe.vault.memory.agent_sessions import WROTE
from lethe.vault.memory.retention import kept_until
from lethe.vault.memory.validation import ValidWrite
from lethe.vault.model import Authority, Caller, SessionTaint, Status, Trust, WriteCommand
from lethe.vault.policy import Standing
from lethe.vault.store.events import Event
from lethe.vault.store.projection import MEMORY_WRITTEN


@dataclass(frozen=True)
class PreparedWrite:
    """A write admitted by validation and policy and keyed for its subject, not yet placed."""

    caller: Caller
    agent_id: str
    cmd: WriteCommand
    valid: ValidWrite
    standing: Standing
    subject_ref: str
    key: SubjectKey
    request_hash: str
    session_taint: str | None = None  # the tainted session's cause (JSON), set under the lock


@dataclass(frozen=True)
class Target:
    """Where a write lands: a new memory at version 1, or the next version of an existing one."""

    memory_id: str
    version: int
    created_at: datetime
    kept_until: datetime | None = None  # an update never keeps a memory longer (``memory.retention``)


def written_event(w: PreparedWrite, at: Target, now: datetime, token_estimate: int) -> Event:
    """The ``memory.written`` event of a prepared write at its target (sealed content)."""
    cmd, key = w.cmd, w.key
    provenance = cmd.provenance
    assert provenance is not None  # validation requires it
    origin = provenance.origin()  # sealed with the content; the payload holds its digest only
    ciphertext = seal(
        key.data_key,
        w.caller.tenant_id,
        w.subject_ref,
        at.memory_id,
        at.version,
        cmd.subject_id,
        cmd.content,
        origin,
    )
    payload = {
        "agent_id": w.agent_id,
        "purpose": cmd.purpose,
        "kind": w.valid.kind.value,
        "content_hmac": content_commitment(key.data_key, cmd.content.encode()),
        "token_estimate": token_estimate,
        "provenance": {**provenance.clear_part(), "origin_hmac": origin_commitment(key.data_key, origin)},
        "authority": w.standing.authority.value,
        "trust": w.standing.trust.value,
        "status": w.standing.status.value,
        "confidence": decimal(cmd.confidence),
        "created_at": iso(at.created_at),
        "expires_at": iso(kept_until(w.valid.expires_at, at.kept_until)),
        "version": at.version,
        "supersedes_id": cmd.supersedes_id,
        "idempotency_key": cmd.idempotency_key,
        "request_hash": w.request_hash,
        "key_generation": key.generation,
        "written_by": w.caller.principal,
    }
    if w.session_taint is not None:  # only then: other writes' events are as before
        payload["session_taint"] = json.loads(w.session_taint)
    return Event(
        MEMORY_WRITTEN,
        w.caller.tenant_id,
        payload,
        at.memory_id,
        w.subject_ref,
        ciphertext,
        occurred_at=iso(now),
    )


def stored_in_session(
    w: PreparedWrite, session_taint: str | None, memory_id: str, now: datetime
) -> tuple[PreparedWrite, SessionTaint | None]:
    """A write of a session as its lock found the session: a tainted session's write is
    quarantined and untrusted, recording the session's cause, and extends the taint; an
    external write (the policy's ``external`` standing) taints an untainted session. The
    write as it will be stored, and the taint to record (None: the session is untouched)."""
    if session_taint is not None:
        tainted = Standing(w.standing.authority, Trust.UNTRUSTED, Status.QUARANTINED)
        return replace(w, standing=tainted, session_taint=session_taint), SessionTaint.from_json(
            session_taint
        )
    if w.standing.authority is Authority.EXTERNAL:
        return w, SessionTaint(WROTE + w.valid.source_type.value, iso(now), memory_id=memory_id)
    return w, None


def origin_of(cmd: WriteCommand) -> dict[str, str]:
    return cmd.provenance.origin() if cmd.provenance else {}


def decimal(x: float) -> float | int:
    """Confidence as JSON-safe number (RFC 8785 has exact rules for floats)."""
    return int(x) if float(x).is_integer() else round(float(x), 6)


def request_hash(data_key: bytes, cmd: WriteCommand) -> str:
    """Keyed by the subject's data key: no dictionary attack on short contents."""
    body = canonical_json(
        {
            "id": cmd.id,
            "subject_id": cmd.subject_id,
            "purpose": cmd.purpose,
            "kind": cmd.kind,
            "content": cmd.content,
            "provenance": cmd.provenance.as_dict() if cmd.provenance else None,
            "confidence": decimal(cmd.confidence),
            "expires_at": iso(cmd.expires_at) if cmd.expires_at else None,
            "ttl_seconds": cmd.ttl_seconds,
            "expected_version": cmd.expected_version,
            "supersedes_id": cmd.supersedes_id,
        }
    )
    return hmac.new(derive_key(data_key, b"lethe idempotency v1"), body, hashlib.sha256).hexdigest()
