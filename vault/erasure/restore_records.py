"""The officer's records that outlive a restore: erasure jobs, certificates, legal holds, forks.

Restoring an older snapshot would otherwise drop every erasure request filed after it, the
certificates issued for them and the legal holds placed since: the record a privacy officer
must keep (GDPR Art. 5(2), 30). ``read_records`` copies those rows out of the store about to
be replaced (through its own connections, never by reading the file); ``reimport`` writes
them back into the restored one, in the restore's transaction, the newer row winning where
both hold one. Certificates are self-contained (their checkpoint and proofs travel inside),
so they verify after the restore exactly as before it.

Exceptions: none of its own; SQLAlchemy errors reach the restore, which rolls back.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from lethe.vault.store.db import UnitOfWork
from lethe.vault.store.tables import (
    audit_forks,
    checkpoints,
    erasure_extensions,
    erasure_final_reports,
    erasure_jobs,
    erasure_reports,
    erasure_steps,
    legal_holds,
)

# parents before children; each row is keyed by its primary key (reports also by job)
KEPT = (
    erasure_jobs,
    erasure_steps,
    erasure_extensions,
    erasure_reports,
    erasure_final_reports,
    legal_holds,
    audit_forks,
)


@dataclass(frozen=True)
class LiveRecords:
    """What the store about to be replaced holds: the kept rows, and its log's head."""

    rows: dict[str, list[dict[str, Any]]]
    tree_size: int
    checkpoints: list[tuple[int, str]]  # (tree size, signed note), oldest first

    def count(self, table: sa.Table) -> int:
        return len(self.rows.get(table.name, []))


def read_records(uow: UnitOfWork) -> LiveRecords | None:
    """The live store's records, or None if it cannot be read (a store already lost)."""
    try:
        with uow.read() as conn:
            rows = {t.name: [dict(r._mapping) for r in conn.execute(sa.select(t)).all()] for t in KEPT}
            size = conn.execute(sa.text("SELECT coalesce(max(seq), 0) FROM events")).scalar_one()
            notes = conn.execute(
                sa.select(checkpoints.c.tree_size, checkpoints.c.note).order_by(checkpoints.c.tree_size)
            ).all()
    except sa.exc.SQLAlchemyError:
        return None
    return LiveRecords(rows, int(size), [(r.tree_size, r.note) for r in notes])


def reimport(conn: Connection, records: LiveRecords) -> dict[str, int]:
    """Write the live rows into the restored store, replacing the snapshot's older copies."""
    counts = {}
    for table in KEPT:
        rows = records.rows.get(table.name, [])
        keys = list(table.primary_key.columns)
        for row in rows:
            conn.execute(table.delete().where(sa.and_(*(c == row[c.name] for c in keys))))
            if table is erasure_reports or table is erasure_final_reports:
                conn.execute(table.delete().where(table.c.job_id == row["job_id"]))
        if rows:
            conn.execute(table.insert(), rows)
        counts[table.name] = len(rows)
    return counts
