"""Turns: a periodic job that reads the whole store runs once per interval, not per worker.

Every worker of every node wakes for the expiry sweep and the scheduled compaction, each at
its own moment (``api.http.background``). Each scan reads every memory or the whole log:
run by all of them, a cluster of N workers did N times the work for the same result. So
a worker first takes the job's turn: one conditional upsert of the job's row, which
succeeds only if nobody took the turn within the interval. The database decides, in one
statement, across processes and nodes: no coordinator, no clock but the workers' own.

Whoever took the last turn wakes first again one interval later (it waits from the end
of its run), so the same worker keeps taking it while it lives; when it stops, the next
worker to wake past the interval takes over. A worker whose clock runs behind the others'
by more than ``SLACK`` of an interval takes over only later (by its skew): servers are
expected to keep their clocks in step (NTP), as the certificates' timestamps already are.
"""

from __future__ import annotations

import functools
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa

from lethe.vault.clock import to_db
from lethe.vault.store.db import UnitOfWork, upsert_insert
from lethe.vault.store.tables import scheduled_turns

# A turn is free again once this share of the interval is left: the worker that took it
# sleeps one interval after its run by the monotonic clock, and the turn is stamped with
# the wall clock, which may be adjusted meanwhile; a worker waking just after it still
# finds the turn taken.
SLACK = 0.05


def take_turn(uow: UnitOfWork, job: str, interval: timedelta, now: datetime) -> bool:
    """Take ``job``'s turn at ``now`` if nobody took it in the last ``interval`` (less the
    slack); True if this caller must run the job now. One short write transaction."""
    free_since = to_db(now - interval * (1 - SLACK))
    with uow.write() as conn:
        stmt = _upsert(conn.dialect.name)
        taken = conn.execute(stmt, {"job": job, "taken_at": to_db(now), "free_since": free_since})
        return taken.first() is not None


@functools.lru_cache(maxsize=2)
def _upsert(dialect: str) -> Any:
    """Insert the job's row, or move its time forward if its turn is free (else nothing).
    RETURNING says which (psycopg reports no row count for it through the unit of work)."""
    insert = upsert_insert(scheduled_turns, dialect)
    return (
        insert.values(job=sa.bindparam("job"), taken_at=sa.bindparam("taken_at"))
        .on_conflict_do_update(
            index_elements=["job"],
            set_={"taken_at": insert.excluded.taken_at},
            where=scheduled_turns.c.taken_at <= sa.bindparam("free_since", type_=sa.DateTime),
        )
        .returning(scheduled_turns.c.job)
    )  # a row only if inserted or moved: the turn is ours
