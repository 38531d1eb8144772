"""The SQL of erasure jobs, their steps and legal holds; the one mapper per aggregate.

Functions over the caller's ``Connection``, so each joins the transaction the service
opened: the rules (who may, what order, when a job is done) stay in ``ErasureService``,
and how jobs are stored stays here. ``job_from_rows`` is the one place an
``erasure_jobs`` row and its ``erasure_steps`` become an ``ErasureJob``; ``hold_from_row``
likewise for ``LegalHold``.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from lethe.vault.clock import from_db, iso, parse_iso, to_db
from lethe.vault.erasure.model import BLOCKED, RECEIVED, ErasureJob, ErasureStep, LegalHold
from lethe.vault.store.tables import erasure_jobs, erasure_steps, legal_holds

Row = Any  # a SQLAlchemy row (attribute access by column name)
_job = erasure_jobs.c


# -- mappers ---------------------------------------------------------------------------------


def job_from_rows(row: Row, steps: list[Row], now: datetime) -> ErasureJob:
    """The job of an ``erasure_jobs`` row and its step rows (in order); ``now`` decides ``overdue``."""
    return ErasureJob(
        id=row.id,
        tenant_id=row.tenant_id,
        status=row.status,
        legal_basis=row.legal_basis,
        reference=row.reference,
        requested_by=row.requested_by,
        received_at=from_db(row.received_at),
        due_at=from_db(row.due_at),
        updated_at=from_db(row.updated_at),
        completed_at=from_db(row.completed_at) if row.completed_at else None,
        last_error=row.last_error,
        report_id=row.report_id,
        steps=[
            ErasureStep(s.step, parse_iso(s.completed_at), s.event_seq, json.loads(s.evidence)) for s in steps
        ],
        overdue=row.completed_at is None and now > from_db(row.due_at),
        subject_ref=row.subject_ref,
        subject_commitment=row.subject_commitment,
        commitment_salt=row.commitment_salt,
    )


def hold_from_row(row: Row) -> LegalHold:
    return LegalHold(
        id=row.id,
        tenant_id=row.tenant_id,
        reason=row.reason,
        reference=row.reference,
        placed_by=row.placed_by,
        placed_at=from_db(row.placed_at),
        lifted_at=from_db(row.lifted_at) if row.lifted_at else None,
        subject_ref=row.subject_ref,
    )


# -- jobs ------------------------------------------------------------------------------------


def insert_job(
    conn: Connection,
    *,
    job_id: str,
    tenant_id: str,
    subject_ref: str,
    subject_commitment: str,
    commitment_salt: str,
    legal_basis: str,
    reference: str | None,
    requested_by: str,
    received_at: datetime,
    due_at: datetime,
) -> None:
    """A new job in status ``received``."""
    conn.execute(
        erasure_jobs.insert().values(
            id=job_id,
            tenant_id=tenant_id,
            subject_ref=subject_ref,
            subject_commitment=subject_commitment,
            commitment_salt=commitment_salt,
            legal_basis=legal_basis,
            reference=reference,
            requested_by=requested_by,
            status=RECEIVED,
            received_at=to_db(received_at),
            due_at=to_db(due_at),
            updated_at=to_db(received_at),
            attempts=0,
        )
    )


def load_job(conn: Connection, job_id: str, now: datetime) -> ErasureJob | None:
    row = conn.execute(sa.select(erasure_jobs).where(_job.id == job_id)).first()
    if row is None:
        return None
    steps = conn.execute(
        sa.select(erasure_steps).where(erasure_steps.c.job_id == job_id).order_by(erasure_steps.c.event_seq)
    ).all()
    return job_from_rows(row, list(steps), now)


def job_ids(
    conn: Connection, tenant_id: str, status: str | None = None, overdue_at: datetime | None = None
) -> list[str]:
    """The tenant's job ids, oldest first; only ``status``, or only unfinished past due at ``overdue_at``."""
    q = sa.select(_job.id).where(_job.tenant_id == tenant_id)
    if status:
        q = q.where(_job.status == status)
    if overdue_at is not None:
        q = q.where(_job.completed_at.is_(None), _job.due_at < to_db(overdue_at))
    return list(conn.execute(q.order_by(_job.received_at)).scalars().all())


def runnable_job_ids(conn: Connection) -> list[str]:
    """Every unfinished job not blocked by a hold, oldest first (any tenant)."""
    q = sa.select(_job.id).where(_job.completed_at.is_(None), _job.status != BLOCKED)
    return list(conn.execute(q.order_by(_job.received_at)).scalars().all())


def unfinished_jobs_of(conn: Connection, tenant_id: str, subject_ref: str) -> int:
    q = sa.select(sa.func.count()).select_from(erasure_jobs)
    q = q.where(_job.tenant_id == tenant_id, _job.subject_ref == subject_ref, _job.completed_at.is_(None))
    return conn.execute(q).scalar_one()


def record_progress(conn: Connection, job_id: str, status: str, at: datetime, *, completed: bool) -> None:
    """A step is done: the job takes its name as status, clears its error, and is stamped if done."""
    conn.execute(
        erasure_jobs.update()
        .where(_job.id == job_id)
        .values(
            status=status,
            updated_at=to_db(at),
            last_error=None,
            completed_at=to_db(at) if completed else None,
        )
    )


def note_failure(conn: Connection, job_id: str, status: str, reason: str, at: datetime) -> None:
    """A step could not finish: record why, count the attempt, keep (or park in) ``status``."""
    conn.execute(
        erasure_jobs.update()
        .where(_job.id == job_id)
        .values(status=status, last_error=reason[:500], attempts=_job.attempts + 1, updated_at=to_db(at))
    )


def block(conn: Connection, job_id: str, reason: str, at: datetime) -> None:
    """A legal hold stops the job until it is lifted."""
    conn.execute(
        erasure_jobs.update()
        .where(_job.id == job_id)
        .values(status=BLOCKED, last_error=reason[:500], updated_at=to_db(at))
    )


def unblock_jobs_of(conn: Connection, tenant_id: str, subject_ref: str, at: datetime) -> None:
    """Jobs a hold blocked go back to ``received`` once it is lifted."""
    conn.execute(
        erasure_jobs.update()
        .where(_job.tenant_id == tenant_id, _job.subject_ref == subject_ref, _job.status == BLOCKED)
        .values(status=RECEIVED, last_error=None, updated_at=to_db(at))
    )


def set_report(conn: Connection, job_id: str, report_id: str) -> None:
    conn.execute(erasure_jobs.update().where(_job.id == job_id).values(report_id=report_id))


# -- leases ----------------------------------------------------------------------------------


def lease_of(conn: Connection, job_id: str) -> Row | None:
    """(lease_owner, lease_until) of the job, or None if there is no such job."""
    return conn.execute(sa.select(_job.lease_owner, _job.lease_until).where(_job.id == job_id)).first()


def take_lease(conn: Connection, job_id: str, owner: str, until: datetime) -> bool:
    """Set the job's lease; False if the job is gone or finished."""
    taken = conn.execute(
        erasure_jobs.update()
        .where(_job.id == job_id, _job.completed_at.is_(None))
        .values(lease_owner=owner, lease_until=to_db(until))
    ).rowcount
    return taken == 1


def release_lease(conn: Connection, job_id: str, owner: str) -> None:
    conn.execute(
        erasure_jobs.update()
        .where(_job.id == job_id, _job.lease_owner == owner)
        .values(lease_owner=None, lease_until=None)
    )


# -- steps -----------------------------------------------------------------------------------


def insert_step(
    conn: Connection, job_id: str, step: str, completed_at: datetime, event_seq: int, evidence: dict[str, Any]
) -> None:
    conn.execute(
        erasure_steps.insert().values(
            job_id=job_id,
            step=step,
            completed_at=iso(completed_at),
            event_seq=event_seq,
            evidence=json.dumps(evidence),
        )
    )


def step_done(conn: Connection, job_id: str, step: str) -> bool:
    q = sa.select(erasure_steps.c.step).where(erasure_steps.c.job_id == job_id, erasure_steps.c.step == step)
    return conn.execute(q).first() is not None


# -- legal holds -----------------------------------------------------------------------------


def insert_hold(conn: Connection, hold: LegalHold) -> None:
    conn.execute(
        legal_holds.insert().values(
            id=hold.id,
            tenant_id=hold.tenant_id,
            subject_ref=hold.subject_ref,
            reason=hold.reason,
            reference=hold.reference,
            placed_by=hold.placed_by,
            placed_at=to_db(hold.placed_at),
        )
    )


def get_hold(conn: Connection, hold_id: str) -> LegalHold | None:
    row = conn.execute(sa.select(legal_holds).where(legal_holds.c.id == hold_id)).first()
    return hold_from_row(row) if row is not None else None


def lift_hold(conn: Connection, hold_id: str, at: datetime) -> None:
    conn.execute(legal_holds.update().where(legal_holds.c.id == hold_id).values(lifted_at=to_db(at)))


def active_hold(conn: Connection, tenant_id: str, subject_ref: str) -> LegalHold | None:
    """The oldest hold on the subject that is not lifted, or None."""
    row = conn.execute(
        sa.select(legal_holds)
        .where(
            legal_holds.c.tenant_id == tenant_id,
            legal_holds.c.subject_ref == subject_ref,
            legal_holds.c.lifted_at.is_(None),
        )
        .order_by(legal_holds.c.placed_at)
    ).first()
    return hold_from_row(row) if row is not None else None
