"""The logical forget: tombstone a subject, then whatever was derived from it.

``tombstone_subject``: one ``subject.forgotten`` event; every memory of the subject
becomes ``forgotten``, loses its ciphertext in the projection and leaves the search
index, and the erasure fence goes up, all in one transaction. ``purge_derived``: every
summary built (transitively, ``memory.derived``) from a forgotten memory, whoever its
subject, is tombstoned too. Crypto-shredding (destroying the key) is the erasure workflow's next
step; this module is the part that must happen first and at once. A backup restore
re-applies both, so neither the subject nor a summary of it comes back.

A summary's ``provenance.sources`` are memory ids of its own tenant: another tenant's
memory under the same id is a different memory, and forgetting it purges nothing here.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.engine import Connection

from lethe.vault.clock import iso, utcnow
from lethe.vault.custody.keyring import SubjectKeyring
from lethe.vault.memory import repository as memory_repo
from lethe.vault.memory.derived import derived_from
from lethe.vault.model import Status
from lethe.vault.store.events import Event, EventLog
from lethe.vault.store.projection import MEMORY_TOMBSTONED, SUBJECT_FORGOTTEN, apply


@dataclass(frozen=True)
class TombstoneEvidence:
    seq: int
    generation: int
    memories_forgotten: int
    index_entries_before: int
    index_entries_after: int
    sealed_vectors_before: int = 0
    sealed_vectors_after: int = 0


def tombstone_subject(
    conn: Connection,
    log: EventLog,
    keyring: SubjectKeyring,
    tenant_id: str,
    subject_ref: str,
    request_id: str | None = None,
) -> TombstoneEvidence:
    """Append ``subject.forgotten`` to ``log`` and apply it, inside the caller's write transaction."""
    live = memory_repo.count_unforgotten(conn, tenant_id, subject_ref)
    before = memory_repo.count_index(conn, tenant_id, subject_ref)
    vectors_before = memory_repo.count_vectors(conn, tenant_id, subject_ref)
    key = keyring.current(conn, tenant_id, subject_ref)
    generation = key.generation if key is not None else 0
    if key is not None:
        keyring.revoke(tenant_id, subject_ref, generation)
    event = log.append(
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
    after = memory_repo.count_index(conn, tenant_id, subject_ref)
    vectors_after = memory_repo.count_vectors(conn, tenant_id, subject_ref)
    return TombstoneEvidence(event.seq, generation, live, before, after, vectors_before, vectors_after)


@dataclass(frozen=True)
class DerivedPurge:
    ids: list[str]  # the summaries tombstoned, sorted
    index_entries_removed: int
    sealed_vectors_removed: int = 0
    sealed: tuple[bytes, ...] = ()  # their bytes, for the compaction's byte scan (memory only)


def purge_derived(
    conn: Connection, log: EventLog, tenant_id: str, subject_ref: str, request_id: str | None, now: datetime
) -> DerivedPurge:
    """Tombstone summaries built from any memory of the subject, transitively (``memory.derived``).

    Runs inside the caller's write transaction. Idempotent: summaries already forgotten
    are left as they are; a retracted one is forgotten too (erasure is the stronger removal).
    """
    roots = memory_repo.ids_of_subject(conn, tenant_id, subject_ref)
    derived = derived_from(conn, tenant_id, roots, skip={Status.FORGOTTEN})
    ids = [s.id for s in derived]
    removed = memory_repo.count_index(conn, tenant_id, memory_ids=ids)
    sealed = tuple(memory_repo.sealed_vectors(conn, tenant_id, memory_ids=ids))
    for s in derived:
        payload = {
            "version": s.version + 1,
            "reason": "derived_from_forgotten_subject",
            "request_id": request_id,
        }
        apply(
            conn,
            log.append(
                conn, Event(MEMORY_TOMBSTONED, tenant_id, payload, s.id, s.subject_ref, occurred_at=iso(now))
            ),
        )
    return DerivedPurge(ids, removed, len(sealed), sealed)
