"""The SQL of memories, and the one mapper from a ``memories`` row to a ``MemoryItem``."""

from __future__ import annotations

import json
from typing import Any

from lethe.vault.clock import from_db
from lethe.vault.model import Authority, Kind, MemoryItem, Provenance, SourceType, Status, Trust


def provenance_of(text: str) -> Provenance:
    p = json.loads(text)
    return Provenance(SourceType(p["source_type"]), p["source_ref"], tuple(p.get("sources") or ()))


def to_item(
    row: Any, subject_id: str | None, content: str | None, score: dict[str, float] | None = None
) -> MemoryItem:
    return MemoryItem(
        id=row.id,
        tenant_id=row.tenant_id,
        agent_id=row.agent_id,
        subject_ref=row.subject_ref,
        subject_id=subject_id,
        purpose=row.purpose,
        kind=Kind(row.kind),
        content=content,
        content_hmac=row.content_hmac,
        provenance=provenance_of(row.provenance),
        authority=Authority(row.authority),
        trust=Trust(row.trust),
        confidence=row.confidence,
        created_at=from_db(row.created_at),
        expires_at=from_db(row.expires_at),
        version=row.version,
        status=Status(row.status),
        supersedes_id=row.supersedes_id,
        idempotency_key=row.idempotency_key,
        score=score,
    )
