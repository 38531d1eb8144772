"""What a forget would touch, read before filing it (``dry_run``): nothing is changed.

A privacy officer about to file a request sees what the erasure job's steps would then do:
the subject's memories by status (the ``tombstoned`` step forgets every one not yet
forgotten), the other subjects' summaries built on them (``derived_purged``), the sealed
vectors and search index entries that leave with both, the live key generations
``key_destroyed`` would destroy, the backups taken since the subject's first event (they
hold its ciphertext under keys about to be destroyed), the legal holds that would refuse
the request, and the requests already open for the subject.

One read transaction and no write: no request, no erasure fence, no audit event, and no
key is opened or revoked (key rows are counted, never unwrapped). The counts are those
the job's step evidence then records, read the same way (``erasure.steps``,
``erasure.forgetting``).

Exceptions: ``OutOfScope`` (403; only privacy officers preview a forget),
``InvalidCommand`` (422; a subject id out of bounds), ``StoreUnavailable`` (503).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from lethe.vault.clock import from_db
from lethe.vault.custody.keyring import DESTROYED, SubjectKeyring
from lethe.vault.custody.pseudonyms import Pseudonymizer
from lethe.vault.erasure import repository as erasure_repo
from lethe.vault.erasure.model import LegalHold
from lethe.vault.errors import OutOfScope
from lethe.vault.memory import repository as memory_repo
from lethe.vault.memory.derived import derived_from
from lethe.vault.memory.validation import normal_subject_id
from lethe.vault.model import Caller, Role, Status
from lethe.vault.store.db import UnitOfWork
from lethe.vault.store.tables import backups, erasure_jobs, events, memories
from lethe.vault.store.tenancy import for_caller


@dataclass(frozen=True)
class DerivedSummary:
    """Another subject's summary built (transitively) on the subject's memories."""

    id: str
    status: str


@dataclass(frozen=True)
class BackupHolding:
    """A backup taken after the subject's first event: it holds the subject's ciphertext."""

    id: str
    created_at: str


@dataclass(frozen=True)
class OpenRequest:
    """An erasure request for the subject that has not finished."""

    id: str
    status: str
    received_at: datetime
    due_at: datetime


@dataclass(frozen=True)
class ErasurePreview:
    """The ``dry_run`` answer: what a forget of the subject would touch, as of one read."""

    memories: dict[str, int]  # by status; those not ``forgotten`` are what ``tombstoned`` forgets
    derived: list[DerivedSummary]
    sealed_vectors: int  # the subject's own and its derived summaries'
    index_entries: int  # the subject's own and its derived summaries'
    key_generations: int  # live key generations ``key_destroyed`` would destroy
    backups: list[BackupHolding]
    legal_holds: list[LegalHold]
    open_requests: list[OpenRequest] = field(default_factory=list)

    @property
    def memories_to_forget(self) -> int:
        return sum(n for status, n in self.memories.items() if status != Status.FORGOTTEN.value)

    @property
    def nothing_held(self) -> bool:
        """No memory, no derived summary and no live key: the forget would find nothing."""
        return not (self.memories_to_forget or self.derived or self.key_generations)


@for_caller  # behind PostgreSQL's tenant wall, the reads act for the officer's tenant
def preview_erasure(
    uow: UnitOfWork,
    pseudonyms: Pseudonymizer,
    keyring: SubjectKeyring,
    caller: Caller,
    subject_id: str,
) -> ErasurePreview:
    """Read, in one transaction, what filing a forget of ``subject_id`` would touch."""
    if caller.role is not Role.PRIVACY_OFFICER:
        raise OutOfScope("this credential's role may not do that")
    subject_id = normal_subject_id(subject_id)
    tenant, ref = caller.tenant_id, pseudonyms.subject_ref(caller.tenant_id, subject_id)
    with uow.read() as conn:
        by_status = _memories_by_status(conn, tenant, ref)
        roots = memory_repo.ids_of_subject(conn, tenant, ref)
        derived = derived_from(conn, tenant, roots, skip={Status.FORGOTTEN})
        ids = [d.id for d in derived]
        vectors = memory_repo.count_vectors(conn, tenant, ref, ids)
        index = memory_repo.count_index(conn, tenant, ref, ids)
        gens = keyring.generations(conn, tenant, ref)
        holding = _backups_holding(conn, tenant, ref)
        holds = [h for h in erasure_repo.holds_of(conn, tenant, active=True) if h.subject_ref == ref]
        requests = _open_requests(conn, tenant, ref)
    return ErasurePreview(
        memories=by_status,
        derived=[DerivedSummary(d.id, d.status) for d in derived],
        sealed_vectors=vectors,
        index_entries=index,
        key_generations=sum(1 for g in gens if g.state != DESTROYED),
        backups=holding,
        legal_holds=holds,
        open_requests=requests,
    )


def _memories_by_status(conn: Connection, tenant_id: str, subject_ref: str) -> dict[str, int]:
    q = (
        sa.select(memories.c.status, sa.func.count())
        .where(memories.c.tenant_id == tenant_id, memories.c.subject_ref == subject_ref)
        .group_by(memories.c.status)
    )
    return {str(status): int(n) for status, n in sorted(conn.execute(q).all())}


def _backups_holding(conn: Connection, tenant_id: str, subject_ref: str) -> list[BackupHolding]:
    """Backups whose snapshot reaches the subject's first event (``tree_size`` is the last seq)."""
    first = conn.execute(
        sa.select(sa.func.min(events.c.seq)).where(
            events.c.tenant_id == tenant_id, events.c.subject_ref == subject_ref
        )
    ).scalar_one_or_none()
    if first is None:
        return []
    rows = conn.execute(
        sa.select(backups.c.id, backups.c.created_at)
        .where(backups.c.tree_size >= first)
        .order_by(backups.c.created_at, backups.c.id)
    ).all()
    return [BackupHolding(r.id, r.created_at) for r in rows]


def _open_requests(conn: Connection, tenant_id: str, subject_ref: str) -> list[OpenRequest]:
    j = erasure_jobs.c
    rows = conn.execute(
        sa.select(j.id, j.status, j.received_at, j.due_at)
        .where(j.tenant_id == tenant_id, j.subject_ref == subject_ref, j.completed_at.is_(None))
        .order_by(j.received_at, j.id)
    ).all()
    return [OpenRequest(r.id, r.status, from_db(r.received_at), from_db(r.due_at)) for r in rows]


__all__ = ["BackupHolding", "DerivedSummary", "ErasurePreview", "OpenRequest", "preview_erasure"]
