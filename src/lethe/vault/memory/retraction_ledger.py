"""The retraction ledger across a backup restore: what was retracted stays retracted.

A backup taken before a retraction holds the retracted memories live. Like the ledger of
forgotten subjects (``erasure.backup``), the ledger of retractions is read from the store
about to be replaced (``read_ledger``) and, once the snapshot is in, every retraction the
snapshot does not know is applied again (``reapply``): by the ids it removed, plus the
summaries in the snapshot that cite them or the retracted source. It is recorded again
under its own id, so a later restore of an even older backup re-applies it too.

A retraction by source recorded since sources are hashed names its source by its keyed hash
only: re-applied, it takes the ids it listed and the summaries citing them, not a summary
that cites the source's ref directly and was not in the store when it was recorded (one
recorded before names the source and takes those too).

Limit: the ledger lives in the database. A restore onto a store that cannot be read (the
database itself was lost) has no ledger to re-apply; the docs say so.

Exceptions: none of its own; a database error fails the restore's transaction.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from lethe.vault.memory import repository as repo
from lethe.vault.memory.derived import derived_from
from lethe.vault.memory.retraction import LedgerEntry, Plan, record
from lethe.vault.model import GONE
from lethe.vault.store.db import UnitOfWork
from lethe.vault.store.events import EventLog
from lethe.vault.store.tables import retractions


def read_ledger(uow: UnitOfWork) -> list[LedgerEntry]:
    """Every retraction in the store, oldest first; empty if the store cannot be read."""
    try:
        with uow.read() as conn:
            rows = conn.execute(sa.select(retractions).order_by(retractions.c.event_seq)).all()
    except Exception:  # a store too damaged to read has no ledger to offer; the restore goes on
        return []
    return [
        LedgerEntry(
            id=r.id,
            tenant_id=r.tenant_id,
            requested_by=r.requested_by,
            reason=r.reason,
            memory_id=r.memory_id,
            source_ref=r.source_ref,
            source_hash=r.source_hash,
            memory_ids=tuple(json.loads(r.memory_ids)),
            derived_ids=tuple(json.loads(r.derived_ids)),
            retracted_at=r.retracted_at,
        )
        for r in rows
    ]


def reapply(conn: Connection, log: EventLog, entries: Iterable[LedgerEntry], now: datetime) -> int:
    """Apply again, inside the restore's transaction, each retraction the restored store lacks.

    Returns how many were re-applied.
    """
    known = set(conn.execute(sa.select(retractions.c.id)).scalars())
    count = 0
    for entry in entries:
        if entry.id in known:
            continue
        listed = {*entry.memory_ids, *entry.derived_ids}
        rows = repo.by_ids(conn, entry.tenant_id, sorted(listed))
        roots = listed | ({entry.source_ref} if entry.source_ref else set())
        extra = derived_from(conn, entry.tenant_id, roots, skip=GONE)
        plan = Plan(
            targets=[rows[i] for i in entry.memory_ids if i in rows and rows[i].status not in GONE],
            derived=[rows[i] for i in entry.derived_ids if i in rows and rows[i].status not in GONE] + extra,
        )
        full = replace(entry, derived_ids=tuple(sorted({*entry.derived_ids, *(s.id for s in extra)})))
        record(conn, log, full, plan, now, reapplied=True)
        count += 1
    return count
