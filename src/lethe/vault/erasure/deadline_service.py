"""Deadline commands on an erasure request: extend it, stop its clock, restart it.

GDPR Art. 12(3) lets a controller extend the one-month deadline "by two further months
where necessary", telling the subject "within one month of receipt ... together with
the reasons"; supervisory authorities let the clock stop while the controller waits for
what it needs to verify the requester's identity. Each command changes the job's
deadline columns and appends one audit event (ids, months, times and who acted; never
the reason text, which stays in ``erasure_extensions``) in one transaction.

A paused job is not advanced by any runner (``ErasureService._run_step`` checks in the
destructive step's own transaction), so pausing is only possible before anything was
destroyed: while the job is ``received`` or ``blocked`` by a legal hold. The erasure
fence stays up while paused: no new memory of the subject is accepted meanwhile.

Exceptions: ``OutOfScope`` (403), ``NotFound`` (404), ``InvalidCommand`` (422),
``DeadlineRefused`` (409), ``StoreUnavailable`` (503); see ``ErasureDeadlines``.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.engine import Connection

from lethe.vault.audit.step_names import Step
from lethe.vault.clock import from_db, iso, utcnow
from lethe.vault.erasure import repository as repo
from lethe.vault.erasure.deadlines import MAX_EXTENSION_MONTHS, due_date, first_month_ends
from lethe.vault.erasure.model import (
    BLOCKED,
    ERASURE_EXTENDED,
    ERASURE_PAUSED,
    ERASURE_RESUMED,
    ErasureExtension,
    ErasureJob,
)
from lethe.vault.errors import DeadlineRefused, InvalidCommand, NotFound, OutOfScope
from lethe.vault.memory.validation import require_text
from lethe.vault.model import Caller, Role
from lethe.vault.store.db import UnitOfWork
from lethe.vault.store.events import Event, EventLog
from lethe.vault.store.tenancy import for_caller

CLOCK_SKEW = timedelta(minutes=5)  # a notification time this far ahead of our clock is still "now"
PAUSABLE = (Step.RECEIVED.value, BLOCKED)


class ErasureDeadlines:
    """Extensions and the stopped clock of erasure requests (privacy officers only).

    Exceptions:
    - ``OutOfScope`` (403): the caller is not a privacy officer.
    - ``NotFound`` (404): unknown request, or another tenant's.
    - ``InvalidCommand`` (422): months outside 1-2, a reason out of bounds, a notification
      time before the request was received or in the future, an identity reference that
      is not one line of at most 200 characters.
    - ``DeadlineRefused`` (409): the request is completed; the extensions would exceed two
      months in total; the subject was told after the first month ended; pausing a
      paused request or one whose erasure has begun; resuming one that is not paused.
    - ``StoreUnavailable`` (503): the database cannot be reached.
    """

    def __init__(self, uow: UnitOfWork, clock: Callable[[], datetime] = utcnow, *, log: EventLog) -> None:
        self.uow = uow
        self.clock = clock
        self.log = log

    @for_caller
    def extend(
        self, caller: Caller, job_id: str, months: int, reason: str, subject_notified_at: datetime
    ) -> ErasureJob:
        """Extend the deadline by ``months`` (at most two in total), counted from receipt."""
        _require_officer(caller)
        if isinstance(months, bool) or not isinstance(months, int) or not 1 <= months <= MAX_EXTENSION_MONTHS:
            raise InvalidCommand(f"months is 1 to {MAX_EXTENSION_MONTHS}")
        require_text("reason", reason, 500)
        try:
            told = from_db(subject_notified_at)
        except OverflowError:  # 0001-01-01T00:00+00:01 is in year 0 in UTC
            raise InvalidCommand("subject_notified_at is outside the years 1 to 9999 in UTC") from None
        now = self.clock()
        with self.uow.write() as conn:
            row = self._open_job(conn, caller, job_id)
            received, stopped = from_db(row.received_at), _stopped(row, now)
            if told < received:
                raise InvalidCommand("subject_notified_at is before the request was received")
            if told > now + CLOCK_SKEW:
                raise InvalidCommand("subject_notified_at is in the future")
            total = row.extension_months + months
            if total > MAX_EXTENSION_MONTHS:
                raise DeadlineRefused(
                    f"a deadline may be extended by {MAX_EXTENSION_MONTHS} months in total (Art. 12(3)); "
                    f"this request is already extended by {row.extension_months}"
                )
            first_month = first_month_ends(received, stopped)
            if told > first_month:
                raise DeadlineRefused(
                    "the subject must be told of an extension within one month of receipt (Art. 12(3)); "
                    f"this request's first month ended at {iso(first_month)}"
                )
            paused_so_far = timedelta(microseconds=row.paused_us)
            due = due_date(received, total, paused_so_far)
            number = len(repo.extensions_of(conn, job_id)) + 1
            payload = {
                "request_id": job_id,
                "extension": number,
                "months": months,
                "extension_months": total,
                "subject_notified_at": iso(told),
                "due_at": iso(due),
                "extended_by": caller.principal,
            }
            ev = self._event(conn, row, ERASURE_EXTENDED, payload, now)
            ext = ErasureExtension(number, months, reason, told, now, caller.principal, ev.seq)
            repo.insert_extension(conn, job_id, ext)
            repo.set_deadline(conn, job_id, now, due_at=due, extension_months=total)
            return self._load(conn, job_id, now)

    @for_caller
    def pause(self, caller: Caller, job_id: str) -> ErasureJob:
        """Stop the clock (identity verification): no deadline runs and no step runs until resumed."""
        _require_officer(caller)
        now = self.clock()
        with self.uow.write() as conn:
            row = self._open_job(conn, caller, job_id)
            if row.paused_at is not None:
                raise DeadlineRefused("this request is already paused")
            if row.status not in PAUSABLE:
                raise DeadlineRefused("the erasure of this subject has begun; it can no longer be paused")
            self._event(conn, row, ERASURE_PAUSED, {"request_id": job_id, "paused_by": caller.principal}, now)
            repo.set_deadline(conn, job_id, now, paused_at=now)
            return self._load(conn, job_id, now)

    @for_caller
    def resume(self, caller: Caller, job_id: str, identity_verification_ref: str | None = None) -> ErasureJob:
        """Restart the clock: the due date moves by the time it stood still; the runner resumes."""
        _require_officer(caller)
        ref = identity_ref(identity_verification_ref)
        now = self.clock()
        with self.uow.write() as conn:
            row = self._open_job(conn, caller, job_id)
            if row.paused_at is None:
                raise DeadlineRefused("this request is not paused")
            stood = max(now - from_db(row.paused_at), timedelta(0))
            due = from_db(row.due_at) + stood
            payload = {
                "request_id": job_id,
                "resumed_by": caller.principal,
                "stopped_seconds": int(stood.total_seconds()),
                "due_at": iso(due),
            }
            self._event(conn, row, ERASURE_RESUMED, payload, now)
            values: dict[str, object] = {"due_at": due, "paused_at": None}
            values["paused_us"] = row.paused_us + stood // timedelta(microseconds=1)
            if ref is not None:
                values["identity_verification_ref"] = ref
            repo.set_deadline(conn, job_id, now, **values)
            return self._load(conn, job_id, now)

    # -- helpers ---------------------------------------------------------------------------

    def _open_job(self, conn: Connection, caller: Caller, job_id: str) -> repo.Row:
        row = repo.deadline_row(conn, job_id)
        if row is None or row.tenant_id != caller.tenant_id:
            raise NotFound("erasure request not found")
        if row.completed_at is not None:
            raise DeadlineRefused("this request is completed; its deadline no longer runs")
        return row

    def _event(
        self, conn: Connection, row: repo.Row, type_: str, payload: dict[str, Any], now: datetime
    ) -> Event:
        event = Event(type_, row.tenant_id, payload, subject_ref=row.subject_ref, occurred_at=iso(now))
        return self.log.append(conn, event)

    def _load(self, conn: Connection, job_id: str, now: datetime) -> ErasureJob:
        job = repo.load_job(conn, job_id, now)
        assert job is not None  # read in the same transaction that found it
        return job


def identity_ref(ref: str | None) -> str | None:
    """A reference to an identity verification (a case or ticket id), never the documents:
    one line of at most 200 printable characters."""
    require_text("identity_verification_ref", ref, 200, required=False)
    if ref is not None and any(unicodedata.category(ch).startswith("C") for ch in ref):
        raise InvalidCommand("identity_verification_ref is one line of printable text (a reference only)")
    return ref


def _stopped(row: repo.Row, now: datetime) -> timedelta:
    """How long the request's clock has stood still, the current pause included."""
    current = now - from_db(row.paused_at) if row.paused_at is not None else timedelta(0)
    return timedelta(microseconds=row.paused_us) + max(current, timedelta(0))


def _require_officer(caller: Caller) -> None:
    if caller.role is not Role.PRIVACY_OFFICER:
        raise OutOfScope("only a privacy officer may change a request's deadline")
