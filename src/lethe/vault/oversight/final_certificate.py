"""The final certificate, issued when a KMS's waiting window closes.

A KMS that schedules key destruction (a waiting period, a soft-deleted key) leaves the
first certificate saying "scheduled until ...". The erasure runner calls ``run_due`` on
every pass: for each certified job whose window has passed it asks the KMS again (a
repeated ``destroy_key`` reports the key's state), and once every key's material is
destroyed it logs a ``key_irrecoverable`` step (receipts, and the first certificate's
id and SHA-256) and issues the final certificate over every step, chained to the first
(``supersedes``). A KMS that has not finished yet, or cannot be reached, leaves the job
for the next pass; nothing is claimed before the KMS confirms it.

Exceptions: none escape ``run_due`` (a KMS or certification failure waits for the next
pass); ``StoreUnavailable`` (503) if the database is down.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from lethe.keys.protocol import KeyManager, KmsError
from lethe.vault.audit.step_evidence import KeyDestroyedEvidence, KeyIrrecoverableEvidence
from lethe.vault.audit.step_names import Step
from lethe.vault.clock import iso, parse_iso, utcnow
from lethe.vault.erasure import repository as erasure_repo
from lethe.vault.erasure.model import ErasureJob
from lethe.vault.erasure.steps import StepFailed, record_step
from lethe.vault.oversight.certificate import ErasureReports
from lethe.vault.store.db import UnitOfWork
from lethe.vault.store.events import EventLog
from lethe.vault.store.tables import erasure_final_reports, erasure_jobs, erasure_steps, subject_keys
from lethe.vault.store.tenancy import maintenance_job

log = logging.getLogger("lethe.erasure")


def scheduled_receipts(job: ErasureJob) -> list[dict[str, Any]]:
    """The key_destroyed receipts whose destruction the KMS scheduled rather than did."""
    step = next((s for s in job.steps if s.step == Step.KEY_DESTROYED), None)
    return [] if step is None else KeyDestroyedEvidence.from_dict(step.evidence).scheduled_receipts()


class FinalCertificates:
    """Closes scheduled key destructions: logs ``key_irrecoverable`` and issues the final certificate."""

    def __init__(
        self,
        uow: UnitOfWork,
        kms: KeyManager,
        reports: ErasureReports,
        event_log: EventLog,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self.uow, self.kms, self.reports, self.log, self.clock = uow, kms, reports, event_log, clock

    @maintenance_job("final certificates")
    def run_due(self) -> int:
        """Issue every final certificate that is due now; returns how many were issued."""
        issued = 0
        for job_id in self._candidates():
            try:
                if self.close(job_id):
                    issued += 1
            except (KmsError, StepFailed) as exc:
                log.warning("final certificate deferred", extra={"request_id": job_id, "reason": str(exc)})
        return issued

    @maintenance_job("final certificates")
    def close(self, job_id: str) -> bool:
        """Close one job's window if the KMS confirms the material destroyed; True once final."""
        now = self.clock()
        with self.uow.read() as conn:
            job = erasure_repo.load_job(conn, job_id, now)
        if job is None or job.report_id is None:
            return False
        first = self.reports.load(job.report_id)
        if not any(s.step == Step.KEY_IRRECOVERABLE for s in job.steps):
            pending = scheduled_receipts(job)
            if not pending:
                return False
            if any(now < parse_iso(r.get("irrecoverable_after") or r["destroyed_at"]) for r in pending):
                return False  # the window is still open
            receipts = []
            names = self._key_names(job)
            for r in pending:
                # idempotent: reports the key's state. A receipt of a request with a per-request
                # reference names the key by a label (``erasure.steps.key_label``), not its KMS name.
                now_r = self.kms.destroy_key(names.get(r["generation"], r["key_ref"]))
                if not now_r.material_destroyed:
                    raise StepFailed(f"the KMS has not destroyed generation {r['generation']} yet")
                receipts.append(
                    {
                        "generation": r["generation"],
                        "key_ref": r["key_ref"],
                        "backend": now_r.backend,
                        "material_destroyed": True,
                        "irrecoverable_after": now_r.irrecoverable_after or now_r.destroyed_at,
                        "checked_at": iso(now),
                        "details": now_r.details,
                    }
                )
            evidence = KeyIrrecoverableEvidence(
                receipts=receipts,
                previous_report_id=first.id,
                previous_certificate_sha256=first.sha256,
            )
            self._record(job, evidence.to_dict())
            with self.uow.read() as conn:
                job = erasure_repo.load_job(conn, job_id, self.clock())
            assert job is not None
        self.reports.issue_final(job, first)
        return True

    def _key_names(self, job: ErasureJob) -> dict[Any, str]:
        """The KMS name of each key generation of the job's subject."""
        k = subject_keys.c
        with self.uow.read() as conn:
            rows = conn.execute(
                sa.select(k.generation, k.key_name).where(
                    k.tenant_id == job.tenant_id, k.subject_ref == job.subject_ref
                )
            ).all()
        return {gen: name for gen, name in rows}

    def _record(self, job: ErasureJob, evidence: dict[str, Any]) -> None:
        now = self.clock()
        with self.uow.write() as conn:
            if erasure_repo.step_done(conn, job.id, Step.KEY_IRRECOVERABLE):
                return
            record_step(conn, self.log, job, Step.KEY_IRRECOVERABLE, now, evidence)

    def _candidates(self) -> list[str]:
        """Certified jobs with a scheduled key destruction and no final certificate yet."""
        with self.uow.read() as conn:
            rows = conn.execute(
                sa.select(erasure_steps.c.job_id)
                .join(erasure_jobs, erasure_jobs.c.id == erasure_steps.c.job_id)
                .where(
                    erasure_steps.c.step == Step.KEY_DESTROYED.value,
                    erasure_steps.c.evidence.like('%"scheduled"%'),
                    erasure_jobs.c.report_id.is_not(None),
                    erasure_steps.c.job_id.not_in(sa.select(erasure_final_reports.c.job_id)),
                )
            ).all()
        return [r.job_id for r in rows]
