"""The SQL of erasure jobs, their steps and legal holds; the one mapper per aggregate.

Functions over the caller's ``Connection``, so each joins the transaction the service
opened: the rules (who may, what order, when a job is done) stay in ``ErasureService``,
and how jobs are stored stays here. ``job_from_rows`` is the one place an
``erasure_jobs`` row and its ``erasure_steps`` become an ``ErasureJob``; ``hold_from_row``
likewise for ``LegalHold``. Loading a job or holds also resolves who acted to display
names (``vault.access.principals``); the rows keep principal ids.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from lethe.vault.access.principals import display_names
from lethe.vault.audit.step_names import Step
from lethe.vault.clock import from_db, iso, parse_iso, to_db
from lethe.vault.erasure.deadlines import standing
from lethe.vault.erasure.model import (
    BLOCKED,
    ErasureExtension,
    ErasureJob,
    ErasureStep,
    LegalHold,
)
from lethe.vault.store.tables import (
    erasure_extensions,
    erasure_final_reports,
    erasure_jobs,
    erasure_steps,
    events,
    legal_holds,
)

Row = Any  # a SQLAlchemy row (attribute access by column name)
_job = erasure_jobs.c


# -- mappers ---------------------------------------------------------------------------------


def job_from_rows(
    row: Row,
    steps: list[Row],
    now: datetime,
    extensions: Sequence[Row] = (),
    names: dict[str, str] | None = None,
) -> ErasureJob:
    """The job of an ``erasure_jobs`` row, its step rows and extension rows (in order);
    ``now`` decides where it stands against its deadline, ``names`` maps principals to names."""
    names = names or {}
    completed = from_db(row.completed_at) if row.completed_at else None
    paused_at = from_db(row.paused_at) if row.paused_at else None
    stand = standing(from_db(row.due_at), now, paused_at, completed)
    return ErasureJob(
        id=row.id,
        tenant_id=row.tenant_id,
        status=row.status,
        legal_basis=row.legal_basis,
        reference=row.reference,
        requested_by=row.requested_by,
        received_at=from_db(row.received_at),
        due_at=stand.due_at,
        updated_at=from_db(row.updated_at),
        completed_at=completed,
        last_error=row.last_error,
        report_id=row.report_id,
        steps=[
            ErasureStep(s.step, parse_iso(s.completed_at), s.event_seq, json.loads(s.evidence)) for s in steps
        ],
        overdue=stand.overdue,
        subject_ref=row.subject_ref,
        subject_commitment=row.subject_commitment,
        commitment_salt=row.commitment_salt,
        days_left=stand.days_left,
        paused=paused_at is not None,
        paused_at=paused_at,
        paused_seconds=int(timedelta(microseconds=row.paused_us).total_seconds()),
        extension_months=row.extension_months,
        extended_until=stand.due_at if row.extension_months else None,
        extensions=tuple(
            ErasureExtension(
                number=e.number,
                months=e.months,
                reason=e.reason,
                subject_notified_at=from_db(e.subject_notified_at),
                extended_at=from_db(e.extended_at),
                extended_by=e.extended_by,
                event_seq=e.event_seq,
                extended_by_name=names.get(e.extended_by),
            )
            for e in extensions
        ),
        identity_verification_ref=row.identity_verification_ref,
        requested_by_name=names.get(row.requested_by),
    )


def hold_from_row(row: Row, names: dict[str, str] | None = None) -> LegalHold:
    return LegalHold(
        id=row.id,
        tenant_id=row.tenant_id,
        reason=row.reason,
        reference=row.reference,
        placed_by=row.placed_by,
        placed_at=from_db(row.placed_at),
        lifted_at=from_db(row.lifted_at) if row.lifted_at else None,
        subject_ref=row.subject_ref,
        placed_by_name=(names or {}).get(row.placed_by),
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
    identity_verification_ref: str | None = None,
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
            status=Step.RECEIVED.value,
            received_at=to_db(received_at),
            due_at=to_db(due_at),
            updated_at=to_db(received_at),
            attempts=0,
            identity_verification_ref=identity_verification_ref,
        )
    )


def load_job(conn: Connection, job_id: str, now: datetime) -> ErasureJob | None:
    row = conn.execute(sa.select(erasure_jobs).where(_job.id == job_id)).first()
    if row is None:
        return None
    steps = conn.execute(
        sa.select(erasure_steps).where(erasure_steps.c.job_id == job_id).order_by(erasure_steps.c.event_seq)
    ).all()
    ext = extensions_of(conn, job_id)
    names = display_names(conn, row.tenant_id, [row.requested_by, *(e.extended_by for e in ext)])
    final = conn.execute(
        sa.select(erasure_final_reports.c.id).where(erasure_final_reports.c.job_id == job_id)
    ).scalar_one_or_none()
    job = job_from_rows(row, list(steps), now, ext, names)
    return replace(job, final_report_id=final, event_subject_ref=event_ref(conn, job))


def event_ref(conn: Connection, job: ErasureJob) -> str:
    """The subject reference the job's received event carries (``ErasureJob.event_subject_ref``)."""
    seq = next((s.event_seq for s in job.steps if s.step == Step.RECEIVED), None)
    if seq is None:
        return job.subject_ref
    ref = conn.execute(sa.select(events.c.subject_ref).where(events.c.seq == seq)).scalar_one_or_none()
    return ref or job.subject_ref


def job_ids(
    conn: Connection, tenant_id: str, status: str | None = None, overdue_at: datetime | None = None
) -> list[str]:
    """The tenant's job ids, oldest first; only ``status``, or only unfinished past due at ``overdue_at``."""
    q = sa.select(_job.id).where(_job.tenant_id == tenant_id)
    if status:
        q = q.where(_job.status == status)
    if overdue_at is not None:  # a stopped clock counts up to the moment it stopped
        now = to_db(overdue_at)
        q = q.where(
            _job.completed_at.is_(None),
            sa.or_(
                sa.and_(_job.paused_at.is_(None), _job.due_at < now),
                sa.and_(_job.paused_at.is_not(None), _job.due_at < _job.paused_at),
            ),
        )
    return list(conn.execute(q.order_by(_job.received_at)).scalars().all())


def runnable_job_ids(conn: Connection) -> list[str]:
    """Every unfinished job neither blocked by a hold nor paused, oldest first (any tenant)."""
    q = sa.select(_job.id).where(
        _job.completed_at.is_(None), _job.status != BLOCKED, _job.paused_at.is_(None)
    )
    return list(conn.execute(q.order_by(_job.received_at)).scalars().all())


def deadline_row(conn: Connection, job_id: str) -> Row | None:
    """What deadline changes read, under the caller's write lock."""
    return conn.execute(
        sa.select(
            _job.id,
            _job.tenant_id,
            _job.subject_ref,
            _job.status,
            _job.received_at,
            _job.due_at,
            _job.completed_at,
            _job.paused_at,
            _job.paused_us,
            _job.extension_months,
        ).where(_job.id == job_id)
    ).first()


def is_paused(conn: Connection, job_id: str) -> bool:
    return conn.execute(sa.select(_job.paused_at).where(_job.id == job_id)).scalar() is not None


def set_deadline(conn: Connection, job_id: str, at: datetime, **values: Any) -> None:
    """Change the job's deadline columns (``due_at``, ``paused_at``, ``paused_us``, ...)."""
    values = {k: to_db(v) if isinstance(v, datetime) else v for k, v in values.items()}
    conn.execute(erasure_jobs.update().where(_job.id == job_id).values(updated_at=to_db(at), **values))


def extensions_of(conn: Connection, job_id: str) -> list[Row]:
    q = sa.select(erasure_extensions).where(erasure_extensions.c.job_id == job_id)
    return list(conn.execute(q.order_by(erasure_extensions.c.number)).all())


def insert_extension(conn: Connection, job_id: str, ext: ErasureExtension) -> None:
    conn.execute(
        erasure_extensions.insert().values(
            job_id=job_id,
            number=ext.number,
            months=ext.months,
            reason=ext.reason,
            subject_notified_at=to_db(ext.subject_notified_at),
            extended_at=to_db(ext.extended_at),
            extended_by=ext.extended_by,
            event_seq=ext.event_seq,
        )
    )


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


def unblock_jobs_of(conn: Connection, tenant_id: str, subject_ref: str, at: datetime) -> list[str]:
    """Jobs a hold blocked go back to ``received`` once it is lifted; their ids."""
    return list(
        conn.execute(
            erasure_jobs.update()
            .where(_job.tenant_id == tenant_id, _job.subject_ref == subject_ref, _job.status == BLOCKED)
            .values(status=Step.RECEIVED.value, last_error=None, updated_at=to_db(at))
            .returning(_job.id)
        ).scalars()
    )


def set_report(conn: Connection, job_id: str, report_id: str) -> None:
    conn.execute(erasure_jobs.update().where(_job.id == job_id).values(report_id=report_id))


# -- leases ----------------------------------------------------------------------------------


def lease_of(conn: Connection, job_id: str) -> Row | None:
    """(lease_owner, lease_until, completed_at) of the job, or None if there is no such job."""
    return conn.execute(
        sa.select(_job.lease_owner, _job.lease_until, _job.completed_at).where(_job.id == job_id)
    ).first()


def take_lease(conn: Connection, job_id: str, owner: str, until: datetime) -> None:
    """Set the job's lease (``leases.claim`` has read it, unfinished, in this transaction)."""
    conn.execute(
        erasure_jobs.update()
        .where(_job.id == job_id, _job.completed_at.is_(None))
        .values(lease_owner=owner, lease_until=to_db(until))
    )


def release_lease(conn: Connection, job_id: str, owner: str) -> None:
    conn.execute(
        erasure_jobs.update()
        .where(_job.id == job_id, _job.lease_owner == owner)
        .values(lease_owner=None, lease_until=None)
    )


# -- steps -----------------------------------------------------------------------------------


def insert_step(
    conn: Connection,
    job_id: str,
    step: Step,
    completed_at: datetime,
    event_seq: int,
    evidence: dict[str, Any],
) -> None:
    conn.execute(
        erasure_steps.insert().values(
            job_id=job_id,
            step=step.value,
            completed_at=iso(completed_at),
            event_seq=event_seq,
            evidence=json.dumps(evidence),
        )
    )


def step_done(conn: Connection, job_id: str, step: Step) -> bool:
    done = erasure_steps.c.step == step.value
    q = sa.select(erasure_steps.c.step).where(erasure_steps.c.job_id == job_id, done)
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


def holds_of(conn: Connection, tenant_id: str, active: bool | None = None) -> list[LegalHold]:
    """The tenant's holds, oldest first: all, only those in force (``True``) or only lifted ones."""
    q = sa.select(legal_holds).where(legal_holds.c.tenant_id == tenant_id)
    if active is not None:
        lifted = legal_holds.c.lifted_at
        q = q.where(lifted.is_(None) if active else lifted.is_not(None))
    rows = conn.execute(q.order_by(legal_holds.c.placed_at, legal_holds.c.id)).all()
    names = display_names(conn, tenant_id, [r.placed_by for r in rows])
    return [hold_from_row(r, names) for r in rows]


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
