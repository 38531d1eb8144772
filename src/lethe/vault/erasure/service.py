"""The right-to-forget workflow: a durable job that never claims what it did not verify.

A request becomes a row in ``erasure_jobs``; each step runs in its own transaction that
does the work, appends an ``erasure.step`` audit event carrying the evidence, and
records the step, so a crash between steps loses nothing and a rerun skips what is
done. The one step outside the database, destroying the key, is idempotent at the KMS,
so repeating it after a crash changes nothing. A KMS outage parks the job in
``key_destruction_pending``; the runner retries it.

The steps, their order and how the runner treats each (a hold checked first, the status a
job waits in) are declared in ``erasure.pipeline`` and run by ``erasure.runner`` (leases,
when a job is done). This module holds the commands and who may use them; the domain
objects live in ``erasure.model``, the steps' work in ``erasure.steps``, the SQL in
``erasure.repository``, the deadline rules in ``erasure.deadlines`` and the deadline
commands (extend, pause, resume) in ``erasure.deadline_service``. A paused job (its
clock stopped while the subject's identity is verified) is never advanced: the check
sits in the destructive step's own transaction, so a pause that commits first wins.

Exceptions: ``OutOfScope`` (403), ``InvalidCommand`` (422), ``LegalHoldActive`` (409),
``IdempotencyConflict`` (409),
``NotFound`` (404), ``VersionConflict`` (409), ``StoreUnavailable`` (503); each is
explained in ``ErasureService``'s docstring.
"""

from __future__ import annotations

import builtins
import unicodedata
import uuid
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime, timedelta

from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from lethe.keys.protocol import KeyManager
from lethe.vault.access.principals import display_names
from lethe.vault.audit.certificate_format import keyed_subject_commitment, new_verification_code
from lethe.vault.audit.step_evidence import ReceivedEvidence
from lethe.vault.audit.step_names import Step
from lethe.vault.clock import iso, utcnow
from lethe.vault.custody.keyring import SubjectKeyring
from lethe.vault.custody.pseudonyms import Pseudonymizer
from lethe.vault.custody.subject_aliases import aliases_of
from lethe.vault.erasure import filings, residue
from lethe.vault.erasure import repository as repo
from lethe.vault.erasure.deadline_service import identity_ref
from lethe.vault.erasure.deadlines import due_date
from lethe.vault.erasure.legal_bases import LegalBases
from lethe.vault.erasure.model import (
    BLOCKED,
    LEGAL_HOLD_LIFTED,
    LEGAL_HOLD_PLACED,
    ErasureJob,
    LegalHold,
    Reinstatement,
)
from lethe.vault.erasure.pipeline import Pipeline, erasure_pipeline
from lethe.vault.erasure.refusals import REFUSAL_WINDOW
from lethe.vault.erasure.request_ref import log_receipt, request_ref
from lethe.vault.erasure.runner import ErasureRunner
from lethe.vault.erasure.steps import StepDeps
from lethe.vault.errors import LegalHoldActive, NotFound, OutOfScope, VersionConflict
from lethe.vault.memory.validation import normal_subject_id, require_text
from lethe.vault.model import Caller, Role
from lethe.vault.store.db import UnitOfWork
from lethe.vault.store.events import Event, EventLog
from lethe.vault.store.projection import SUBJECT_REINSTATED, apply
from lethe.vault.store.tenancy import for_caller, maintenance_job
from lethe.vault.webhooks.events import status_changed


class ErasureService(ErasureRunner):
    """Files right-to-forget requests and legal holds, reinstates subjects, and runs the jobs
    (``run_pending``, ``advance``: ``erasure.runner``).

    Exceptions:
    - ``OutOfScope`` (403): the caller's role may not do that (requests and holds are for
      privacy officers; auditors may also read jobs).
    - ``InvalidCommand`` (422): a subject id, reason or reference out of bounds; a legal
      basis not in the vocabulary (the problem lists the accepted codes).
    - ``LegalHoldActive`` (409): a hold on the subject blocks a new request.
    - ``IdempotencyConflict`` (409): an idempotency key already used for another request.
    - ``NotFound`` (404): unknown job or hold, or another tenant's; a hold already lifted.
    - ``VersionConflict`` (409): reinstating a subject that is not forgotten, or whose
      erasure is still running.
    - ``StoreUnavailable`` (503): the database cannot be reached (a KMS outage during a
      job is not an error: the job waits in ``key_destruction_pending``).
    """

    def __init__(
        self,
        uow: UnitOfWork,
        kms: KeyManager,
        keyring: SubjectKeyring,
        pseudonyms: Pseudonymizer,
        pipeline: Pipeline | None = None,
        clock: Callable[[], datetime] = utcnow,
        *,
        log: EventLog,
        legal_bases: LegalBases | None = None,
        kms_refusal_window: timedelta = REFUSAL_WINDOW,
    ) -> None:
        """``pipeline``: the steps and the work after each pass (``erasure.pipeline``; without
        one, the core steps only). ``legal_bases``: the codes a
        request may cite (the standard list unless the deployment adds its own).
        ``kms_refusal_window``: how long a KMS that refuses a key's destruction is asked
        again before the job ends in a ``partial`` certificate (``erasure.refusals``)."""
        deps = StepDeps(uow, kms, keyring, log, clock, kms_refusal_window)
        super().__init__(deps, pipeline or erasure_pipeline())
        self.legal_bases = legal_bases or LegalBases()
        self.keyring = keyring
        self.pseudonyms = pseudonyms

    # -- requests ---------------------------------------------------------------------

    @for_caller
    def request(
        self,
        caller: Caller,
        subject_id: str,
        legal_basis: str,
        reference: str | None,
        identity_verification_ref: str | None = None,
        idempotency_key: str | None = None,
        identifiers: Sequence[str] | None = None,
        residue_action: str | None = None,
    ) -> ErasureJob:
        """File a request, due one calendar month later; the erasure fence goes up at once.

        With an ``idempotency_key``, a retry within 24 hours returns the first filing's request
        and verification code (``replayed`` set) and files nothing (``erasure.filings``); the
        same key with another request is ``IdempotencyConflict``. Two concurrent filings
        with one key make one request: the loser of the primary key reads the winner's.

        The job returned carries ``verification_code``, the one time it exists outside the
        officer's hands: the subject commitment is an HMAC keyed by it, and only the
        commitment is stored, so the certificate confirms the subject to whoever holds the
        code and the id, and confirms no guess to anyone else.

        ``identifiers`` and ``residue_action``: the residue hunt (``erasure.residue``); only
        the identifiers' keyed term hashes are kept, until the request completes.

        ``identity_verification_ref`` names where the subject's identity was checked (a
        ticket or case id): a reference only, never identity documents.

        Stores written before subject ids were NFC-normalised, or before default-ignorable
        code points were removed from them (``custody.subject_aliases``), may hold the subject
        under the spelling it was sent in: when such a legacy ref holds keys, a linked request
        for it is filed too (same basis, reference naming the primary request).
        """
        _require(caller, Role.PRIVACY_OFFICER)
        raw = subject_id
        subject_id = normal_subject_id(subject_id)
        self.legal_bases.check(legal_basis)
        require_text("reference", reference, 200, required=False)
        require_text("idempotency_key", idempotency_key, 128, required=False)
        identity_verification_ref = identity_ref(identity_verification_ref)
        attached = residue.prepare(self.pseudonyms, caller.tenant_id, identifiers, residue_action)
        asked = (subject_id, legal_basis, reference, identity_verification_ref, attached)
        if not idempotency_key:
            return self._request(caller, raw, asked, None)
        try:
            return self._request(caller, raw, asked, idempotency_key)
        except IntegrityError:  # a concurrent filing with this key committed first: it is the one
            return self._request(caller, raw, asked, idempotency_key)

    def _request(
        self,
        caller: Caller,
        raw: str,
        asked: tuple[str, str, str | None, str | None, residue.Identifiers | None],
        idempotency_key: str | None,
    ) -> ErasureJob:
        subject_id, legal_basis, reference, identity_verification_ref, attached = asked
        ref = self.pseudonyms.subject_ref(caller.tenant_id, subject_id)
        spellings = {
            self.pseudonyms.unnormalised_subject_ref(caller.tenant_id, form): form
            for form in (raw, unicodedata.normalize("NFD", subject_id))
        }
        spellings.pop(ref, None)
        now = self.clock()
        job_id = str(uuid.uuid4())
        code = new_verification_code()
        tenant = caller.tenant_id
        seal_key = self.pseudonyms.tenant_secret(tenant, "erasure-filing-seal")
        fp = filings.fingerprint(self.pseudonyms.tenant_secret(tenant, "erasure-filing-body"), *asked)
        replayed = False
        with self.uow.write() as conn:
            prior = filings.find(conn, tenant, idempotency_key, now) if idempotency_key else None
            if prior is not None and idempotency_key:
                filings.check_same(prior, fp)
                job_id, code, replayed = (
                    prior.job_id,
                    filings.open_code(seal_key, tenant, idempotency_key, prior),
                    True,
                )
            else:
                hold = repo.active_hold(conn, tenant, ref)
                if hold is not None:
                    raise LegalHoldActive(
                        f"legal hold {hold.id} blocks erasure of this subject: {hold.reason}"
                    )
                filed = (legal_basis, identity_verification_ref, now, code)
                self._file(conn, caller, job_id, ref, subject_id, reference, *filed)
                residue.store(conn, job_id, tenant, attached)
                for alias in aliases_of(conn, tenant, ref):  # spellings folded since (0028)
                    spellings.setdefault(alias, subject_id)
                for legacy_ref, form in sorted(spellings.items()):
                    if self.keyring.current(conn, tenant, legacy_ref) is not None:
                        linked = f"legacy spelling of request {job_id}"
                        self._file(conn, caller, str(uuid.uuid4()), legacy_ref, form, linked, *filed)
                if idempotency_key:
                    filings.delete_expired(conn, now)  # an expired filing with this key is no retry
                    sealed = filings.seal_code(seal_key, tenant, idempotency_key, job_id, code)
                    filings.record(conn, tenant, idempotency_key, job_id, fp, sealed, now)
        job = self._load(job_id)
        assert job is not None
        return replace(job, verification_code=code, replayed=replayed)

    @maintenance_job("expiry sweep")
    def forget_expired_filings(self) -> int:
        """Delete every tenant's filings past their 24-hour window, sealed codes with them (the
        expiry sweep: across tenants, so past the tenant wall)."""
        with self.uow.write() as conn:
            return filings.delete_expired(conn, self.clock())

    def _file(
        self,
        conn: Connection,
        caller: Caller,
        job_id: str,
        ref: str,
        subject_id: str,
        reference: str | None,
        legal_basis: str,
        identity_verification_ref: str | None,
        now: datetime,
        code: str,
    ) -> None:
        due = due_date(now)
        commitment = keyed_subject_commitment(code, caller.tenant_id, subject_id)
        repo.insert_job(
            conn,
            job_id=job_id,
            tenant_id=caller.tenant_id,
            subject_ref=ref,
            subject_commitment=commitment,
            commitment_salt="",  # keyed by the code instead; the code is never stored
            legal_basis=legal_basis,
            reference=reference,
            requested_by=caller.principal,
            received_at=now,
            due_at=due,
            identity_verification_ref=identity_verification_ref,
        )
        payload = {
            "request_id": job_id,
            "legal_basis": legal_basis,
            "reference": reference,
            "requested_by": caller.principal,
            "due_at": iso(due),
            "subject_commitment": commitment,  # the log commits to it; it tests no guess without the code
        }
        # The certificate embeds this event: it carries a per-request reference, never ``ref``
        # (``erasure.request_ref``); the fence goes up on ``ref`` with it.
        event_ref = request_ref(self.pseudonyms, caller.tenant_id, job_id, ref)
        ev = log_receipt(conn, self.log, caller.tenant_id, payload, ref, event_ref, iso(now))
        repo.insert_step(
            conn, job_id, Step.RECEIVED, now, ev.seq, ReceivedEvidence(legal_basis, iso(due)).to_dict()
        )
        status_changed(conn, caller.tenant_id, job_id, Step.RECEIVED, None, now)  # the webhooks' outbox

    @for_caller
    def get(self, caller: Caller, job_id: str) -> ErasureJob:
        _require(caller, Role.PRIVACY_OFFICER, Role.AUDITOR)
        job = self._load(job_id)
        if job is None or job.tenant_id != caller.tenant_id:
            raise NotFound("erasure request not found")
        return job

    @for_caller
    def list(self, caller: Caller, status: str | None = None, overdue: bool = False) -> list[ErasureJob]:
        _require(caller, Role.PRIVACY_OFFICER, Role.AUDITOR)
        with self.uow.read() as conn:
            ids = repo.job_ids(conn, caller.tenant_id, status, self.clock() if overdue else None)
        return [j for j in (self._load(i) for i in ids) if j is not None]

    # -- legal holds and reinstatement ------------------------------------------------

    @for_caller
    def holds(self, caller: Caller, active: bool | None = None) -> builtins.list[LegalHold]:
        """The tenant's legal holds (all, only those in force, or only lifted ones), oldest first."""
        _require(caller, Role.PRIVACY_OFFICER)
        with self.uow.read() as conn:
            return repo.holds_of(conn, caller.tenant_id, active)

    @for_caller
    def place_hold(
        self, caller: Caller, subject_id: str, reason: str, reference: str | None = None
    ) -> LegalHold:
        _require(caller, Role.PRIVACY_OFFICER)
        subject_id = normal_subject_id(subject_id)
        require_text("reason", reason, 500)
        require_text("reference", reference, 200, required=False)
        ref = self.pseudonyms.subject_ref(caller.tenant_id, subject_id)
        hold_id, now = str(uuid.uuid4()), self.clock()
        hold = LegalHold(hold_id, caller.tenant_id, reason, reference, caller.principal, now, None, ref)
        with self.uow.write() as conn:
            repo.insert_hold(conn, hold)
            name = display_names(conn, caller.tenant_id, [caller.principal]).get(caller.principal)
            hold = replace(hold, placed_by_name=name)
            self.log.append(
                conn,
                Event(
                    LEGAL_HOLD_PLACED,
                    caller.tenant_id,
                    {"hold_id": hold_id, "placed_by": caller.principal},
                    subject_ref=ref,
                    occurred_at=iso(now),
                ),
            )
        return hold

    @for_caller
    def lift_hold(self, caller: Caller, hold_id: str) -> None:
        _require(caller, Role.PRIVACY_OFFICER)
        now = self.clock()
        with self.uow.write() as conn:
            hold = repo.get_hold(conn, hold_id)
            if hold is None or hold.tenant_id != caller.tenant_id or hold.lifted_at is not None:
                raise NotFound("legal hold not found")
            repo.lift_hold(conn, hold_id, now)
            self.log.append(
                conn,
                Event(
                    LEGAL_HOLD_LIFTED,
                    caller.tenant_id,
                    {"hold_id": hold_id, "lifted_by": caller.principal},
                    subject_ref=hold.subject_ref,
                    occurred_at=iso(now),
                ),
            )
            for job_id in repo.unblock_jobs_of(conn, hold.tenant_id, hold.subject_ref, now):
                status_changed(conn, hold.tenant_id, job_id, Step.RECEIVED, BLOCKED, now)

    @for_caller
    def reinstate(self, caller: Caller, subject_id: str, reason: str) -> Reinstatement:
        """Lift the erasure fence. The old generation stays shredded; writes get a new key."""
        _require(caller, Role.PRIVACY_OFFICER)
        subject_id = normal_subject_id(subject_id)
        require_text("reason", reason, 500)
        ref = self.pseudonyms.subject_ref(caller.tenant_id, subject_id)
        now = self.clock()
        with self.uow.write() as conn:
            if not self.keyring.is_fenced(conn, caller.tenant_id, ref):
                raise VersionConflict("this subject is not forgotten")
            if repo.unfinished_jobs_of(conn, caller.tenant_id, ref):
                raise VersionConflict(
                    "an erasure of this subject is still running; reinstate after it completes"
                )
            current = self.keyring.current(conn, caller.tenant_id, ref)
            generation = (current.generation if current is not None else 0) + 1
            ev = self.log.append(
                conn,
                Event(
                    SUBJECT_REINSTATED,
                    caller.tenant_id,
                    {"reinstated_by": caller.principal, "next_generation": generation},
                    subject_ref=ref,
                    occurred_at=iso(now),
                ),
            )
            apply(conn, ev)
        return Reinstatement(caller.tenant_id, generation, now)


def _require(caller: Caller, *roles: Role) -> None:
    if caller.role not in roles:
        raise OutOfScope("this credential's role may not do that")
