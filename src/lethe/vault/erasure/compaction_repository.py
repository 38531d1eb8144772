"""Compaction's SQL: which rows hold dead ciphertext, and the statements that drop it.

Plain functions over a ``Connection``, in the style of ``erasure.repository``; an
``ErasedScope`` narrows them to one erasure's rows (its own ``compacted`` step). What is
dead: every ciphertext of a forgotten or retracted memory, and that of superseded or expired
memories and of older versions of rewritten ones once dead longer than the retention
window (``cutoff``). Subjects whose erasure is still running are left to that erasure.

Exceptions: none of its own (a database failure surfaces as ``StoreUnavailable``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from lethe.vault.clock import iso, to_db
from lethe.vault.model import GONE
from lethe.vault.store.projection import MEMORY_WRITTEN
from lethe.vault.store.tables import erasure_jobs, events, memories


@dataclass(frozen=True)
class ErasedScope:
    """One erasure's rows: the subject's memories and the derived ones purged with it."""

    tenant_id: str
    subject_ref: str
    derived_ids: tuple[str, ...] = ()

    def of_events(self) -> sa.ColumnElement[bool]:
        own = sa.and_(events.c.tenant_id == self.tenant_id, events.c.subject_ref == self.subject_ref)
        if self.derived_ids:
            derived = sa.and_(events.c.tenant_id == self.tenant_id, events.c.memory_id.in_(self.derived_ids))
            own = sa.or_(own, derived)
        return sa.and_(own, events.c.type == MEMORY_WRITTEN)

    def of_memories(self) -> sa.ColumnElement[bool]:
        own = sa.and_(memories.c.tenant_id == self.tenant_id, memories.c.subject_ref == self.subject_ref)
        if self.derived_ids:
            derived = sa.and_(memories.c.tenant_id == self.tenant_id, memories.c.id.in_(self.derived_ids))
            own = sa.or_(own, derived)
        return own


_GONE = sorted(s.value for s in GONE)  # forgotten or retracted: its ciphertext is dead at once

# Subjects whose erasure has not finished: their compaction is the erasure's own step, which
# samples the ciphertext for its byte scan first; a scheduled run must not take that evidence.
_ERASURE_RUNNING = sa.exists().where(
    erasure_jobs.c.tenant_id == memories.c.tenant_id,
    erasure_jobs.c.subject_ref == memories.c.subject_ref,
    erasure_jobs.c.completed_at.is_(None),
)


def dead_events(cutoff: datetime, only_forgotten: bool, scope: ErasedScope | None = None) -> sa.Select[int]:
    """Events whose ciphertext is dead: forgotten memories, or dead since before ``cutoff``."""
    m, later = memories, events.alias("later")
    forgotten = m.c.status.in_(_GONE)
    dead_long_ago = sa.and_(m.c.status.in_(("superseded", "expired")), m.c.updated_at < to_db(cutoff))
    # An older version of a memory that was rewritten: dead once the rewrite is old enough.
    rewritten_long_ago = sa.exists().where(
        later.c.tenant_id == events.c.tenant_id,
        later.c.memory_id == events.c.memory_id,
        later.c.type == MEMORY_WRITTEN,
        later.c.seq > events.c.seq,
        later.c.occurred_at < iso(cutoff),
    )
    q = (
        sa.select(events.c.seq)
        .select_from(
            events.join(m, sa.and_(m.c.tenant_id == events.c.tenant_id, m.c.id == events.c.memory_id))
        )
        .where(events.c.ciphertext.is_not(None), events.c.type == MEMORY_WRITTEN)
    )
    if scope is not None:
        q = q.where(forgotten, scope.of_events())
    elif only_forgotten:
        q = q.where(forgotten, ~_ERASURE_RUNNING)
    else:
        q = q.where(sa.or_(sa.and_(forgotten, ~_ERASURE_RUNNING), dead_long_ago, rewritten_long_ago))
    return q.order_by(events.c.seq)


def dead_memories(
    cutoff: datetime, only_forgotten: bool, scope: ErasedScope | None = None
) -> sa.ColumnElement[bool]:
    """Projection rows still holding dead ciphertext. Without ``scope`` finding them reads
    every memory: no index leads with the status."""
    m = memories
    dead: sa.ColumnElement[bool] = m.c.status.in_(_GONE)
    if scope is not None:
        dead = sa.and_(dead, scope.of_memories())
    elif not only_forgotten:
        dead = sa.or_(
            dead, sa.and_(m.c.status.in_(("superseded", "expired")), m.c.updated_at < to_db(cutoff))
        )
    return sa.and_(m.c.ciphertext.is_not(None), dead)


def dead_event_seqs(conn: Connection, dead: sa.Select[int]) -> list[int]:
    return list(conn.execute(dead).scalars().all())


def ciphertexts_of(conn: Connection, seqs: Sequence[int]) -> list[bytes]:
    """The ciphertexts the events ``seqs`` still hold (those another compaction removed
    meanwhile are left out: on PostgreSQL each statement sees the latest commits)."""
    out: list[bytes] = []
    for i in range(0, len(seqs), 500):
        held = sa.select(events.c.ciphertext).where(
            events.c.seq.in_(seqs[i : i + 500]), events.c.ciphertext.is_not(None)
        )
        out += conn.execute(held).scalars().all()
    return out


def count_ciphertext_events(conn: Connection, scope: ErasedScope, still_held: bool = False) -> int:
    """How many of the scope's events ever carried ciphertext (or still do)."""
    held = events.c.ciphertext if still_held else events.c.ciphertext_digest
    q = sa.select(sa.func.count()).select_from(events).where(scope.of_events(), held.is_not(None))
    return int(conn.execute(q).scalar_one())


def dead_memory_keys(conn: Connection, dead: sa.ColumnElement[bool]) -> list[tuple[str, str]]:
    """(tenant, id) of the memories ``dead`` selects."""
    rows = conn.execute(sa.select(memories.c.tenant_id, memories.c.id).where(dead)).all()
    return [(r[0], r[1]) for r in rows]


def drop_event_ciphertexts(conn: Connection, seqs: Sequence[int]) -> int:
    """NULL the ciphertext of the events ``seqs`` that still hold one; how many did."""
    return conn.execute(
        events.update()
        .where(events.c.seq.in_(seqs), events.c.ciphertext.is_not(None))
        .values(ciphertext=None)
    ).rowcount


def drop_memory_ciphertexts(
    conn: Connection, keys: Sequence[tuple[str, str]], dead: sa.ColumnElement[bool]
) -> int:
    """NULL the ciphertext of the memories ``keys`` that are still ``dead``; how many did."""
    key = sa.tuple_(memories.c.tenant_id, memories.c.id)
    return conn.execute(memories.update().where(key.in_(keys), dead).values(ciphertext=None)).rowcount


def postgres_bytes(conn: Connection) -> int:
    """The size of the two tables compaction rewrites, indexes and TOAST included (PostgreSQL)."""
    q = sa.text("SELECT pg_total_relation_size('events') + pg_total_relation_size('memories')")
    return int(conn.execute(q).scalar_one())


def rows_still_holding(conn: Connection, digests: Sequence[str], scope: ErasedScope | None) -> int:
    """How many events (of ``scope``, or any) still hold a ciphertext of these digests."""
    within = scope.of_events() if scope is not None else sa.true()
    left = 0
    for i in range(0, len(digests), 500):
        left += conn.execute(
            sa.select(sa.func.count())
            .select_from(events)
            .where(
                within,
                events.c.ciphertext_digest.in_(digests[i : i + 500]),
                events.c.ciphertext.is_not(None),
            )
        ).scalar_one()
    return left
