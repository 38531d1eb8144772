"""Rebuild the projection from the event log, or check that it would come out the same.

The projection (``memories``, ``idempotency_keys``, ``forgotten_subjects``,
``review_decisions``, ``retractions``) is derived and disposable. ``check`` applies every
event to an empty scratch database and compares it with the live tables row by row;
``rebuild`` replaces the live projection. The search index needs the keys as well as the
log, so ``check`` compares it through a hook (``memory.reindex.IndexCheck``) the caller
passes; ``lethe reindex`` rebuilds it. Both span every tenant, so they run on ``engine`` as
the tables' owner, never behind the tenant wall (a maintenance path, docs/operations.md).
"""

from __future__ import annotations

import gc
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import chain, zip_longest
from operator import itemgetter
from typing import Protocol

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from lethe.vault.store import scope_changes as scope_tokens
from lethe.vault.store.db import UnitOfWork, make_engine
from lethe.vault.store.driver_rows import raw_rows
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


def _rows(conn: Connection, table: sa.Table, raw: bool) -> Iterator[tuple]:
    """Every row of ``table`` in column order; ``raw``: as the driver returns it (both sides
    of the compare on one dialect), else as typed."""
    return raw_rows(conn, table) if raw else (tuple(r) for r in conn.execute(sa.select(*table.columns)))


def _key_getter(at: list[int]) -> Callable[[tuple], tuple]:
    """A row's primary key as a tuple (``itemgetter`` gives a bare value for one column)."""
    if len(at) == 1:
        i = at[0]
        return lambda r: (r[i],)
    return itemgetter(*at)


def _differences(table: sa.Table, live: Iterable[tuple], replayed: Iterable[tuple]) -> list[str]:
    """What differs between the two sides of one table, in primary-key order.

    Both sides usually come in the same order (SQLite returns a table in insertion order,
    and replay inserts in the log's order, as the writers did), so rows are compared in step
    while they are equal; from the first pair that is not, the rest are matched by key."""
    live, replayed = iter(live), iter(replayed)
    for a, b in zip_longest(live, replayed):  # None: that side has ended
        if a != b:
            first_live = [] if a is None else [a]
            first_replayed = [] if b is None else [b]
            return _by_key(table, chain(first_live, live), chain(first_replayed, replayed))
    return []


def _by_key(table: sa.Table, live: Iterable[tuple], replayed: Iterable[tuple]) -> list[str]:
    """What differs between two sides in any order, each row matched by its primary key."""
    cols = [c.name for c in table.columns]
    at = [cols.index(c.name) for c in table.primary_key.columns]
    key_of = _key_getter(at)
    left = {key_of(r): r for r in live}
    pairs = []  # (key, live row or None, replayed row or None) of each difference
    for b in replayed:
        key = key_of(b)
        a = left.pop(key, None)
        if a != b:
            pairs.append((key, a, b))
    pairs += [(key, a, None) for key, a in left.items()]
    out = []
    for key, a, b in sorted(pairs, key=lambda p: repr(p[0])):
        if a is None or b is None:
            where = "replay" if a is None else "live projection"
            out.append(f"{table.name} {key}: only in the {where}")
        else:
            diff = [c for c, x, y in zip(cols, a, b, strict=True) if x != y]
            out.append(f"{table.name} {key}: columns differ: {', '.join(diff)}")
    return out


# Indexes of the live store that no replay lookup uses: the scratch database goes without
# them, since keeping them up to date was a fifth of a check.
_SCRATCH_SKIPS = ("ix_memories_scope", "ix_memories_review", "ix_memories_authority")


def _scratch() -> Engine:
    """An empty in-memory database with the projection and derived tables replay writes."""
    scratch = make_engine("sqlite://")
    derived = [search_index, search_postings, memory_vectors, scope_changes]
    metadata.create_all(scratch, tables=[*COMPARED, *derived])
    with scratch.begin() as conn:
        for name in _SCRATCH_SKIPS:
            conn.exec_driver_sql(f"DROP INDEX {name}")
    return scratch


@contextmanager
def _cycle_collector_paused() -> Iterator[None]:
    """Replay makes millions of short-lived rows (tuples, dicts), none in a reference cycle:
    reference counting frees them, and the cyclic collector's passes over them were a tenth
    of a check's time. It runs again afterwards, as it was."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def check(
    engine: Engine, progress: Progress | None = None, index: DerivedIndexCheck | None = None
) -> ReplayReport:
    """Replay into a scratch in-memory database and diff it against the live projection
    (and, given ``index``, the live search index against the one the replay gives)."""
    scratch = _scratch()
    with (
        _cycle_collector_paused(),
        UnitOfWork(engine, row_security=False).read() as src,
        scratch.begin() as dst,
    ):
        n = _apply_all(src, dst, progress)
        report = ReplayReport(events=n)
        raw = src.dialect.name == dst.dialect.name
        for table in COMPARED:
            report.differences.extend(_differences(table, _rows(src, table, raw), _rows(dst, table, raw)))
        if index is not None:
            report.differences.extend(index.differences(dst, src))
    scratch.dispose()
    return report


def rebuild(engine: Engine, progress: Progress | None = None) -> ReplayReport:
    """Replace the live projection with one rebuilt from events, in one transaction."""
    with _cycle_collector_paused(), UnitOfWork(engine, row_security=False).write() as conn:
        for table in COMPARED:
            conn.execute(table.delete())
        n = _apply_all(conn, conn, progress)
        scope_tokens.everything_changed(conn, str(uuid.uuid4()))  # no process keeps a scope read before
    return ReplayReport(events=n)
