"""The logical forget: one ``subject.forgotten`` event that tombstones a subject.

Every memory of the subject becomes ``forgotten``, loses its ciphertext in the
projection and leaves the search index, and the erasure fence goes up, all in one
transaction. Crypto-shredding (destroying the key) is the erasure workflow's next
step; this module is the part that must happen first and at once.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from vault.clock import iso, utcnow
from vault.events import Event, SqlEventLog
from vault.keyring import SubjectKeyring
from vault.projection import SUBJECT_FORGOTTEN, apply
from vault.tables import memories, search_index


@dataclass(frozen=True)
class TombstoneEvidence:
    seq: int
    generation: int
    memories_forgotten: int
    index_entries_before: int
    index_entries_after: int


def tombstone_subject(
    conn: Connection, keyring: SubjectKeyring, tenant_id: str, subject_ref: str, request_id: str | None = None
) -> TombstoneEvidence:
    """Append ``subject.forgotten`` and apply it, inside the caller's write transaction."""
    scope = (memories.c.tenant_id == tenant_id, memories.c.subject_ref == subject_ref)
    live = conn.execute(
        sa.select(sa.func.count()).select_from(memories).where(*scope, memories.c.status != "forgotten")
    ).scalar_one()
    idx = (search_index.c.tenant_id == tenant_id, search_index.c.subject_ref == subject_ref)
    before = conn.execute(sa.select(sa.func.count()).select_from(search_index).where(*idx)).scalar_one()
    key = keyring.current(conn, tenant_id, subject_ref)
    generation = key.generation if key is not None else 0
    if key is not None:
        keyring.revoke(tenant_id, subject_ref, generation)
    event = SqlEventLog().append(
        conn,
        Event(
            SUBJECT_FORGOTTEN,
            tenant_id,
            {"request_id": request_id, "generation": generation, "memories_forgotten": live},
            None,
            subject_ref,
            occurred_at=iso(utcnow()),
        ),
    )
    apply(conn, event)
    after = conn.execute(sa.select(sa.func.count()).select_from(search_index).where(*idx)).scalar_one()
    return TombstoneEvidence(event.seq, generation, live, before, after)
