"""Rebuild the projection from the event log, or check that it would come out the same.

The projection (``memories``, ``idempotency_keys``, ``forgotten_subjects``,
``review_decisions``, ``retractions``) is derived and disposable. ``check`` applies every
event to an empty scratch database and compares it with the live tables row by row;
``rebuild`` replaces the live projection. The search index needs the keys as well as the
log, so ``check`` compares it through a hook (``memory.reindex.IndexCheck``) the caller
passes; ``lethe reindex`` rebuilds it.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from lethe.vault.store import scope_changes as scope_tokens
from lethe.vault.store.db import UnitOfWork, make_engine
from lethe.vault.store.events import Event, read_events
from lethe.vault.store.projection import apply_many
from lethe.vault.store.tables import (
    forgotten_subjects,
    idempotency_keys,
    memories,
    memory_vectors,
    metadata,
    retractions,
    review_decisions,
    scope_changes,
    search_index,
    search_postings,
)

COMPARED = (memories, idempotency_keys, forgotten_subjects, review_decisions, retractions)
Progress = Callable[[int], None]


class DerivedIndexCheck(Protocol):
    """Compares a derived index with the one the replayed projection (and the keys) give."""

    def differences(self, replayed: Connection, live: Connection) -> list[str]: ...


@dataclass
class ReplayReport:
    events: int
    differences: list[str] = field(default_factory=list)

    @property
    def identical(self) -> bool:
        return not self.differences


BATCH = 2000  # events applied per ``apply_many`` call


def _apply_all(source: Connection, target: Connection, progress: Progress | None) -> int:
    """Apply every event in order, in batches: runs of new memories become bulk inserts."""
    n = 0
    batch: list[Event] = []
    for event in read_events(source, batch=BATCH):
        batch.append(event)
        if len(batch) == BATCH:
            apply_many(target, batch)
            n += len(batch)
            batch = []
            if progress:
                progress(n)
    apply_many(target, batch)
    return n + len(batch)


def _rows(conn: Connection, table: sa.Table) -> dict[tuple, tuple]:
    """Every row of ``table`` as a tuple in column order, keyed by its primary key."""
    cols = list(table.columns)
    at = [cols.index(c) for c in table.primary_key.columns]
    if len(at) == 1:
        i = at[0]
        return {(r[i],): tuple(r) for r in conn.execute(sa.select(*cols))}
    return {tuple(r[i] for i in at): tuple(r) for r in conn.execute(sa.select(*cols))}


def check(
    engine: Engine, progress: Progress | None = None, index: DerivedIndexCheck | None = None
) -> ReplayReport:
    """Replay into a scratch in-memory database and diff it against the live projection
    (and, given ``index``, the live search index against the one the replay gives)."""
    scratch = make_engine("sqlite://")
    derived = [search_index, search_postings, memory_vectors, scope_changes]
    metadata.create_all(scratch, tables=[*COMPARED, *derived])
    with UnitOfWork(engine).read() as src, scratch.begin() as dst:
        n = _apply_all(src, dst, progress)
        report = ReplayReport(events=n)
        for table in COMPARED:
            live, replayed = _rows(src, table), _rows(dst, table)
            cols = [c.name for c in table.columns]
            for key in sorted(set(live) | set(replayed), key=repr):
                a, b = live.get(key), replayed.get(key)
                if a is None or b is None:
                    where = "replay" if a is None else "live projection"
                    report.differences.append(f"{table.name} {key}: only in the {where}")
                elif a != b:
                    diff = [c for c, x, y in zip(cols, a, b, strict=True) if x != y]
                    report.differences.append(f"{table.name} {key}: columns differ: {', '.join(diff)}")
        if index is not None:
            report.differences.extend(index.differences(dst, src))
    scratch.dispose()
    return report


def rebuild(engine: Engine, progress: Progress | None = None) -> ReplayReport:
    """Replace the live projection with one rebuilt from events, in one transaction."""
    with UnitOfWork(engine).write() as conn:
        for table in COMPARED:
            conn.execute(table.delete())
        n = _apply_all(conn, conn, progress)
        scope_tokens.everything_changed(conn, str(uuid.uuid4()))  # no process keeps a scope read before
    return ReplayReport(events=n)
