"""The expiry sweep's webhook work: ``request.due_soon`` and ``request.overdue``, and
forgetting finished deliveries after ``KEEP``.

Run once per sweep interval across the deployment (the expiry sweep's turn). An unfinished,
unpaused erasure request due within ``DUE_SOON`` gets one ``request.due_soon`` event, and one
``request.overdue`` once past due. Each event's id is named by the request, the type and the
due date (``events.named_event_id``), so a later sweep, another worker or another node writes
nothing new; an extension moves the due date and so makes the request due soon again.

Exceptions: none of its own; storage errors reach the background loop.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

import sqlalchemy as sa

from lethe.vault.clock import from_db, iso, to_db, utcnow
from lethe.vault.store.db import UnitOfWork
from lethe.vault.store.tables import (
    erasure_jobs,
    webhook_attempts,
    webhook_deliveries,
    webhook_endpoints,
    webhook_events,
)
from lethe.vault.store.tenancy import maintenance_job
from lethe.vault.webhooks.events import REQUEST_DUE_SOON, REQUEST_OVERDUE, named_event_id, record

DUE_SOON = timedelta(days=7)
KEEP = timedelta(days=30)  # how long a finished delivery's record (and its attempts) is kept


@maintenance_job("expiry sweep")
def sweep_deadlines(uow: UnitOfWork, clock: Callable[[], datetime] = utcnow) -> int:
    """Write the due-soon and overdue events not written yet; how many were written."""
    now = clock()
    j = erasure_jobs
    with uow.read() as conn:
        tenants = sa.select(webhook_endpoints.c.tenant_id).distinct()
        rows = conn.execute(
            sa.select(j.c.id, j.c.tenant_id, j.c.status, j.c.due_at).where(
                j.c.completed_at.is_(None),
                j.c.paused_at.is_(None),
                j.c.due_at <= to_db(now + DUE_SOON),
                j.c.tenant_id.in_(tenants),
            )
        ).all()
    written = 0
    for row in rows:
        due = from_db(row.due_at)
        kind = REQUEST_OVERDUE if due <= now else REQUEST_DUE_SOON
        data = {"request_id": row.id, "status": row.status, "due_at": iso(due)}
        event_id = named_event_id(row.tenant_id, row.id, kind, iso(due))
        with uow.write() as conn:
            if record(conn, row.tenant_id, kind, data, now, event_id) is not None:
                written += 1
    return written


@maintenance_job("expiry sweep")
def prune_deliveries(uow: UnitOfWork, now: datetime, keep: timedelta = KEEP) -> int:
    """Forget deliveries finished (delivered or failed) more than ``keep`` ago, their attempts,
    and the events left with no delivery; how many deliveries went. Pending ones stay."""
    d, a, e = webhook_deliveries, webhook_attempts, webhook_events
    cutoff = to_db(now - keep)
    done = sa.select(d.c.id).where(d.c.state.in_(("delivered", "failed")), d.c.next_attempt_at < cutoff)
    with uow.write() as conn:
        ids = list(conn.execute(done).scalars())
        if ids:
            conn.execute(a.delete().where(a.c.delivery_id.in_(ids)))
            conn.execute(d.delete().where(d.c.id.in_(ids)))
        orphans = sa.select(d.c.id).where(d.c.event_id == e.c.id).exists()
        conn.execute(e.delete().where(e.c.created_at < cutoff, ~orphans))
    return len(ids)
