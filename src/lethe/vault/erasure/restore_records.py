"""The officer's records that outlive a restore: erasure jobs, certificates, legal holds, forks.

Restoring an older snapshot would otherwise drop every erasure request filed after it, the
certificates issued for them and the legal holds placed since: the record a privacy officer
must keep (GDPR Art. 5(2), 30). ``read_records`` copies those rows out of the store about to
be replaced (through its own connections, never by reading the file); ``reimport`` writes
them back into the restored one, in the restore's transaction, the newer row winning where
both hold one. Certificates are self-contained (their checkpoint and proofs travel inside),
so they verify after the restore exactly as before it.

A request still running when the store was replaced had logged its steps on the branch
the restore abandons, so they cannot be certified from the new one: ``restart_unfinished``
logs its receipt again on the new branch (same request, same time and due date; the
erasure fence goes up again) and drops its other steps, and the runner does them again.

Exceptions: none of its own; SQLAlchemy errors reach the restore, which rolls back.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from lethe.vault.audit.step_names import Step
from lethe.vault.store.db import UnitOfWork
from lethe.vault.store.events import Event, EventLog
from lethe.vault.store.projection import ERASURE_RECEIVED, apply
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


def restart_unfinished(conn: Connection, log: EventLog, records: LiveRecords, fork_size: int) -> list[str]:
    """Re-log, on the new branch, the receipt of each unfinished request with a step on the
    abandoned one, and drop its steps there; returns the request ids restarted."""
    steps: dict[str, list[dict[str, Any]]] = {}
    for row in records.rows.get(erasure_steps.name, []):
        steps.setdefault(row["job_id"], []).append(row)
    restarted = []
    for job in records.rows.get(erasure_jobs.name, []):
        mine = steps.get(job["id"], [])
        if job["completed_at"] is not None or all(r["event_seq"] <= fork_size for r in mine):
            continue
        received = next((r for r in mine if r["step"] == Step.RECEIVED), None)
        if received is None:
            continue
        evidence = json.loads(received["evidence"])
        payload = {
            "request_id": job["id"],
            "legal_basis": job["legal_basis"],
            "reference": job["reference"],
            "requested_by": job["requested_by"],
            "due_at": evidence.get("due_at"),
        }
        if not job["commitment_salt"]:
            payload["subject_commitment"] = job["subject_commitment"]
        event = Event(
            ERASURE_RECEIVED,
            job["tenant_id"],
            payload,
            subject_ref=job["subject_ref"],
            occurred_at=received["completed_at"],
        )
        ev = log.append(conn, event)
        apply(conn, ev)  # the erasure fence, again
        conn.execute(erasure_steps.delete().where(erasure_steps.c.job_id == job["id"]))
        conn.execute(
            erasure_steps.insert().values(
                job_id=job["id"],
                step=Step.RECEIVED.value,
                completed_at=received["completed_at"],
                event_seq=ev.seq,
                evidence=received["evidence"],
            )
        )
        conn.execute(
            erasure_jobs.update()
            .where(erasure_jobs.c.id == job["id"])
            .values(status=Step.RECEIVED.value, last_error=None, lease_owner=None, lease_until=None)
        )
        restarted.append(job["id"])
    return restarted
