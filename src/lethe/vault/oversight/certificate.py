"""Erasure certificates: what was done for a right-to-forget request, signed and provable.

A certificate is one RFC 8785 canonical JSON document (format ``FORMAT``) holding the
request, its ``result`` (v3: ``erased``, ``nothing_held`` or ``partial``, decided by the
evidence through ``certificate_format.result_of``, with what is ``missing`` named), the
subject commitment, every step with its time and evidence, what remains
and why, backup coverage, a signed checkpoint of the audit log, and for every step's
audit event its canonical bytes, leaf index and inclusion proof. An Ed25519 signature
by the log's key covers ``SIGNATURE_DOMAIN`` followed by the canonical document without
its ``signature`` member; ``vault.verify_certificate`` checks it all offline.

The certificate is issued by the erasure job's ``reported`` step (``certificate_work``),
which runs after every other step. That step's own audit event is appended after the
certificate exists, so it cannot be inside the certificate it produces: a certificate
covers the steps up to the one before ``reported``, whatever they are (``compacted``
included, when that step is installed before it). The ``reported`` event records the
report id and the certificate's SHA-256, so the log itself commits to the certificate.

Issuing is idempotent per job (a rerun after a crash returns the stored certificate),
and fails closed: the issuer verifies its own certificate before storing it.

Here: ``ErasureReports`` (issue, store, serve) and the ``reported`` step's work. The
document is built and signed in ``audit.certificate_document``, its statements are in
``audit.certificate_wording``, its SQL in ``audit.certificate_repository``.

Exceptions:
- ``StepFailed`` (from ``vault.erasure``): the certificate cannot be issued now (a
  preceding step is not recorded, the log refused to sign, or self-verification
  failed); the job stays where it is and the runner retries.
- ``NotFound`` (404): unknown report, or another tenant's.
- ``OutOfScope`` (403): the caller's role may not read reports.
- ``StoreUnavailable`` (503): the database is down.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy.engine import Connection

from lethe.keys.signing import Ed25519Signer
from lethe.vault.audit import certificate_repository as repo
from lethe.vault.audit.certificate_repository import ErasureReport
from lethe.vault.audit.log import AuditLog
from lethe.vault.audit.step_evidence import ReportedEvidence, TombstonedEvidence
from lethe.vault.audit.step_names import Step
from lethe.vault.audit.verify import verify_certificate
from lethe.vault.clock import iso, utcnow
from lethe.vault.erasure import repository as erasure_repo
from lethe.vault.erasure import residue
from lethe.vault.erasure.model import ErasureJob, ErasureStep
from lethe.vault.erasure.steps import StepContext, StepFailed, StepFn
from lethe.vault.errors import LogInconsistent, NotFound, OutOfScope
from lethe.vault.model import Caller, Role
from lethe.vault.oversight.certificate_document import CertifiedStep, build_certificate, sign_certificate
from lethe.vault.store.tenancy import for_caller, maintenance_job
from lethe.vault.webhooks.events import reported

__all__ = [
    "MAX_CONSISTENCY_PROOFS",
    "CertifiedStep",
    "ErasureReport",
    "ErasureReports",
    "build_certificate",
    "certificate_work",
    "sign_certificate",
]

MAX_CONSISTENCY_PROOFS = 32


class ErasureReports:
    """Issues, stores and serves erasure certificates.

    Exceptions: ``OutOfScope`` (403, a role that may not read reports), ``NotFound``
    (404, unknown report or another tenant's), ``StoreUnavailable`` (503). ``issue`` is
    the ``reported`` step's work and raises ``StepFailed`` when it cannot certify now.
    """

    def __init__(
        self, audit: AuditLog, signer: Ed25519Signer, clock: Callable[[], datetime] = utcnow
    ) -> None:
        self.audit = audit
        self.signer = signer
        self.clock = clock
        self._uow = audit.uow

    # -- reading --------------------------------------------------------------------------

    @for_caller
    def get(self, caller: Caller, report_id: str) -> ErasureReport:
        """A report of the caller's tenant, for privacy officers and auditors."""
        if caller.role not in (Role.PRIVACY_OFFICER, Role.AUDITOR):
            raise OutOfScope("this credential's role may not read erasure reports")
        report = self._load(report_id)
        if report.tenant_id != caller.tenant_id:
            raise NotFound("erasure report not found")
        return report

    @maintenance_job("report by id")
    def load(self, report_id: str) -> ErasureReport:
        """Any tenant's report, first or final (for the operator's CLI)."""
        return self._load(report_id)

    def _load(self, report_id: str) -> ErasureReport:
        with self._uow.read() as conn:
            report = repo.load(conn, report_id)
        if report is None:
            raise NotFound("erasure report not found")
        return report

    def final_for_job(self, job_id: str) -> ErasureReport | None:
        with self._uow.read() as conn:
            return repo.final_of_job(conn, job_id)

    def for_job(self, job_id: str) -> ErasureReport | None:
        with self._uow.read() as conn:
            return repo.first_of_job(conn, job_id)

    # -- issuing ---------------------------------------------------------------------------

    def issue(self, job: ErasureJob, required_steps: Sequence[str] = ()) -> ErasureReport:
        """Certify ``job``'s recorded steps; idempotent per job.

        ``required_steps`` are the steps that must be recorded first (the reported step
        passes every step that precedes it). Raises ``StepFailed`` if one is missing,
        if the log refuses to sign, or if the certificate fails its own verification.
        """
        existing = self.for_job(job.id)
        if existing is not None:
            return existing
        recorded = [s.step for s in job.steps]
        missing = [name for name in (Step.RECEIVED, *required_steps) if name not in recorded]
        if missing:
            raise StepFailed(f"cannot certify: step(s) {', '.join(missing)} not recorded")
        report_id, issued_at, data = self._certify(job, None)
        report = ErasureReport(report_id, job.id, job.tenant_id, issued_at, data)
        with self._uow.write() as conn:
            first = repo.first_of_job(conn, job.id)
            if first is not None:
                return first  # another runner issued it first
            repo.insert_first(conn, report)
            erasure_repo.set_report(conn, job.id, report_id)
            reported(conn, job.tenant_id, job.id, report_id, data, self.clock(), final=False)
        return report

    def issue_final(self, job: ErasureJob, first: ErasureReport) -> ErasureReport:
        """The final certificate of a job whose ``key_irrecoverable`` step is recorded: every
        step, chained to ``first`` by its SHA-256; idempotent per job."""
        existing = self.final_for_job(job.id)
        if existing is not None:
            return existing
        if not any(s.step == Step.KEY_IRRECOVERABLE for s in job.steps):
            raise StepFailed(f"cannot issue the final certificate: {Step.KEY_IRRECOVERABLE} not recorded")
        supersedes = {"report_id": first.id, "certificate_sha256": first.sha256}
        report_id, issued_at, data = self._certify(job, supersedes)
        report = ErasureReport(report_id, job.id, job.tenant_id, issued_at, data)
        with self._uow.write() as conn:
            final = repo.final_of_job(conn, job.id)
            if final is not None:
                return final
            repo.insert_final(conn, report, first.id)
            reported(conn, job.tenant_id, job.id, report_id, data, self.clock(), final=True)
        return report

    def _certify(self, job: ErasureJob, supersedes: dict[str, Any] | None) -> tuple[str, str, bytes]:
        """Sign a checkpoint, build, sign and self-verify the certificate of the job's steps."""
        try:
            head = self.audit.sign()
        except LogInconsistent as exc:
            raise StepFailed(f"the audit log refused to sign a checkpoint: {exc.detail}") from exc
        steps = sorted(job.steps, key=lambda s: s.event_seq)
        if steps[-1].event_seq > head.tree_size:
            raise StepFailed("the signed checkpoint does not cover every step")
        with self._uow.read() as conn:
            canonical = repo.canonical_events(conn, [s.event_seq for s in steps])
            before = repo.backups_before(conn, _forget_seq(steps))
            hunted = next((s for s in steps if s.step == Step.RESIDUE_HUNTED), None)
            found = (
                None
                if hunted is None
                else residue.outcomes(conn, job.tenant_id, hunted.evidence, hunted.event_seq)
            )
        missing = [s.event_seq for s in steps if s.event_seq not in canonical]
        if missing:
            raise StepFailed(f"audit events {missing} are missing from the log")
        size = head.tree_size
        records = [
            CertifiedStep(s, canonical[s.event_seq], self.audit.inclusion_proof(s.event_seq - 1, size))
            for s in steps
        ]
        consistency = [
            (cp.tree_size, self.audit.consistency_proof(cp.tree_size, head.tree_size))
            for cp in self.audit.stored(limit=MAX_CONSISTENCY_PROOFS, below=head.tree_size)
            if cp.tree_size > 0
        ]
        report_id = str(uuid.uuid4())
        issued_at = iso(self.clock())
        document = build_certificate(
            report_id=report_id,
            issued_at=issued_at,
            job=job,
            origin=self.audit.origin,
            public_key_raw=self.signer.public_key_raw(),
            checkpoint_note=head.note,
            steps=records,
            consistency_proofs=consistency,
            backups_before=before,
            supersedes=supersedes,
            residue_found=found,
        )
        data = sign_certificate(document, self.signer, self.audit.origin)
        check = verify_certificate(data, self.signer.public_key_pem(), tenant=job.tenant_id)
        if not check.ok:
            raise StepFailed(f"the certificate failed its own verification: {check.summary()}")
        return report_id, issued_at, data


def _forget_seq(steps: Sequence[ErasureStep]) -> int | None:
    """The seq of the ``subject.forgotten`` event (the tombstoned step records it)."""
    for s in steps:
        if s.step == Step.TOMBSTONED:
            seq = TombstonedEvidence.from_dict(s.evidence).event_seq
            return seq if seq is not None else s.event_seq
    return None


def certificate_work(
    audit_log: AuditLog, signer: Ed25519Signer, reports: ErasureReports | None = None
) -> StepFn:
    """The work of the ``reported`` step (``erasure.pipeline``): issue the certificate for
    every step before it.

    Generic over what precedes it: the steps required are those the job has before this
    one (core steps, then e.g. ``compacted``). Its evidence names the report, the checkpoint
    size it is anchored to and the certificate's SHA-256. The pipeline declares it outside
    a transaction: signing a checkpoint takes the log's write lock itself.
    """
    service = reports or ErasureReports(audit_log, signer)

    def run(ctx: StepContext, _conn: Connection | None) -> dict[str, Any]:
        names = list(ctx.step_names)
        preceding = names[: names.index(Step.REPORTED)] if Step.REPORTED in names else names
        report = service.issue(ctx.job, preceding)
        note = report.parsed()["checkpoint"]["note"]
        return ReportedEvidence(
            report_id=report.id,
            checkpoint_tree_size=int(note.split("\n")[1]),
            certificate_sha256=report.sha256,
        ).to_dict()

    return run
