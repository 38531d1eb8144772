"""The erasure runner: advances jobs through the pipeline's steps, one lease at a time.

Each step runs in its own transaction (or, outside the database, records in one after it),
appends its ``erasure.step`` event and records the step, so a crash between steps loses
nothing and a rerun skips what is done. How a step is treated (a legal hold checked before
it, the status a job waits in when it cannot finish) is read from the step
(``erasure.pipeline``); a job is complete at the last step it has. A paused job (its clock
stopped while the subject's identity is verified) is never advanced: the check sits in the
step's own transaction, so a pause that commits first wins.

``ErasureService`` (the commands) is an ``ErasureRunner``.

Exceptions: ``StoreUnavailable`` (503) if the database is down; ``StepFailed`` never
reaches the caller (the job keeps its reason in ``last_error``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import datetime
from typing import Any

from sqlalchemy.engine import Connection

from lethe.vault.audit.step_names import Step
from lethe.vault.erasure import leases, residue
from lethe.vault.erasure import repository as repo
from lethe.vault.erasure.leases import Claim
from lethe.vault.erasure.model import BLOCKED, ErasureJob
from lethe.vault.erasure.pipeline import Pipeline
from lethe.vault.erasure.steps import StepContext, StepDeps, StepFailed, StepSpec, record_step
from lethe.vault.runner_ids import new_runner_id
from lethe.vault.store.db import UnitOfWork
from lethe.vault.store.events import EventLog
from lethe.vault.store.tenancy import maintenance_job
from lethe.vault.webhooks.events import status_changed

log = logging.getLogger("lethe.erasure")


class ErasureRunner:
    """Runs erasure jobs: holds a job's lease while it runs its steps in order; a step that
    cannot finish now leaves the job where it is with its reason in ``last_error``."""

    def __init__(self, deps: StepDeps, pipeline: Pipeline) -> None:
        self.deps = deps
        self.uow: UnitOfWork = deps.uow
        self.clock: Callable[[], datetime] = deps.clock
        self.log: EventLog = deps.log
        self.runner_id = new_runner_id()
        # The lease keeps other processes out; the threads of this one share its runner id
        # (a server's runner and a request, or a test, on the same container), so they take
        # turns here instead: a second thread waits and then finds the steps recorded.
        self._advancing = threading.Lock()
        self.steps: list[StepSpec] = list(pipeline.steps)
        self.after_run = list(pipeline.after_run)
        self._final_status = pipeline.final_step

    @property
    def final_status(self) -> Step:  # the last step every job has (the residue hunt is not one)
        return self._final_status

    @maintenance_job("erasure runner")
    def run_pending(self) -> int:
        """Advance every unfinished job as far as it goes now; returns how many finished."""
        with self.uow.read() as conn:
            ids = repo.runnable_job_ids(conn)
        finished = sum(1 for job_id in ids if self.advance(job_id))
        for work in self.after_run:
            work()
        return finished

    @maintenance_job("erasure runner")
    def advance(self, job_id: str) -> bool:
        """Run the job's remaining steps in order; True once it is complete, whoever ran them.

        Only the runner holding the job's lease runs its steps (a server's runner, a CLI
        ``forget``, another node); the others return False and leave it to the holder. A
        lease left by a runner that died expires after ``leases.LEASE``. The threads of one
        process advance jobs one at a time. A finished job takes no lease (there is nothing
        left to run) and answers True.
        """
        with self._advancing:
            return self._advance(job_id)

    def _advance(self, job_id: str) -> bool:
        claim = self._claim(job_id)
        if claim is not Claim.TAKEN:  # held by another runner, finished, or no such job
            return claim is Claim.FINISHED
        try:
            job = self._load(job_id)
            if job is None:
                return False
            # The steps this job has, read once a pass (the residue hunt's needs a query).
            names = tuple(s.name for s in self.steps if s.applies_to(self.uow, job))
            for spec in self.steps:
                job = self._load(job_id)
                if job is None or job.completed_at is not None:
                    return job is not None
                if any(s.step == spec.name for s in job.steps) or spec.name not in names:
                    continue
                claim = self._claim(job_id)  # renewed before each step; lost if it expired
                if claim is not Claim.TAKEN:
                    return claim is Claim.FINISHED
                if spec.checks_holds and not self._hold_check(job):
                    return False
                try:
                    if not self._run_step(job, spec, names):
                        return False
                except StepFailed as exc:
                    self._note_failure(job, spec, str(exc))
                    return False
        finally:
            self._release(job_id)
        return self._finished(job_id)

    def _finished(self, job_id: str) -> bool:
        job = self._load(job_id)
        return job is not None and job.completed_at is not None

    def _claim(self, job_id: str) -> Claim:
        return leases.claim(self.uow, job_id, self.runner_id, self.clock())

    def _release(self, job_id: str) -> None:
        leases.release(self.uow, job_id, self.runner_id)

    def _run_step(self, job: ErasureJob, spec: StepSpec, names: tuple[Step, ...]) -> bool:
        """Run one step of the job's ``names`` and record it; False if the job's clock was
        stopped first (paused)."""
        ctx = StepContext(job, self.deps, names)
        if spec.transactional:
            with self.uow.write() as conn:
                if repo.step_done(conn, job.id, spec.name):
                    return True  # another runner finished it first
                if repo.is_paused(conn, job.id):
                    return False  # identity is being verified: nothing is destroyed meanwhile
                self._record(conn, job, spec.name, spec.run(ctx, conn), names[-1])
        else:
            evidence = spec.run(ctx, None)
            with self.uow.write() as conn:
                if not repo.step_done(conn, job.id, spec.name):
                    self._record(conn, job, spec.name, evidence, names[-1])
        return True

    def _record(self, conn: Connection, job: ErasureJob, step: Step, ev: dict[str, Any], last: Step) -> None:
        """Record a step; the job is complete at ``last``, the last step that applies to it."""
        now = self.clock()
        record_step(conn, self.log, job, step, now, ev)
        repo.record_progress(conn, job.id, step.value, now, completed=step == last)
        status_changed(conn, job.tenant_id, job.id, step.value, job.status, now, completed=step == last)
        if step == last:
            residue.forget(conn, job.id)  # the identifiers' hashes live as long as the request
        log.info("erasure step completed", extra={"request_id": job.id, "step": step.value})
        if step == Step.KEY_DESTROYED and ev.get("refused"):
            log.warning(
                "the KMS refused key destruction past its window: the certificate will be partial",
                extra={"request_id": job.id, "step": step.value, "refused": len(ev["refused"])},
            )

    def _note_failure(self, job: ErasureJob, spec: StepSpec, reason: str) -> None:
        status = spec.waiting_status or job.status
        now = self.clock()
        with self.uow.write() as conn:
            repo.note_failure(conn, job.id, status, reason, now)
            status_changed(conn, job.tenant_id, job.id, status, job.status, now)
        log.warning(
            "erasure step deferred", extra={"request_id": job.id, "step": spec.name.value, "reason": reason}
        )

    def _hold_check(self, job: ErasureJob) -> bool:
        """A hold placed after the request blocks the job before anything is destroyed."""
        with self.uow.write() as conn:
            hold = repo.active_hold(conn, job.tenant_id, job.subject_ref)
            if hold is None:
                return True
            now = self.clock()
            repo.block(conn, job.id, f"legal hold {hold.id}: {hold.reason}", now)
            status_changed(conn, job.tenant_id, job.id, BLOCKED, job.status, now)
        return False

    def _load(self, job_id: str) -> ErasureJob | None:
        with self.uow.read() as conn:
            return repo.load_job(conn, job_id, self.clock())
