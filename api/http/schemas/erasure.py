"""Erasure requests, legal holds and reinstatements, as privacy officers and auditors see them."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from lethe.api.http.schemas.common import Strict, SubjectId
from lethe.vault.erasure.service import ErasureJob, LegalHold, Reinstatement


class ErasureRequestIn(Strict):
    subject_id: SubjectId
    legal_basis: str = Field(min_length=1, max_length=64, description="e.g. gdpr-art17-1a")
    reference: str | None = Field(default=None, max_length=200)


class ErasureAccepted(BaseModel):
    id: str
    status: str
    received_at: datetime
    due_at: datetime

    @classmethod
    def from_domain(cls, job: ErasureJob) -> ErasureAccepted:
        return cls(id=job.id, status=job.status, received_at=job.received_at, due_at=job.due_at)


class ErasureStepOut(BaseModel):
    step: str
    completed_at: datetime
    event_seq: int
    evidence: dict[str, Any]


class ErasureJobOut(BaseModel):
    id: str
    tenant_id: str
    status: str
    legal_basis: str
    reference: str | None
    requested_by: str
    received_at: datetime
    due_at: datetime
    updated_at: datetime
    completed_at: datetime | None
    last_error: str | None
    report_id: str | None
    steps: list[ErasureStepOut]
    overdue: bool

    @classmethod
    def from_domain(cls, job: ErasureJob) -> ErasureJobOut:
        return cls(
            id=job.id,
            tenant_id=job.tenant_id,
            status=job.status,
            legal_basis=job.legal_basis,
            reference=job.reference,
            requested_by=job.requested_by,
            received_at=job.received_at,
            due_at=job.due_at,
            updated_at=job.updated_at,
            completed_at=job.completed_at,
            last_error=job.last_error,
            report_id=job.report_id,
            steps=[
                ErasureStepOut(
                    step=s.step, completed_at=s.completed_at, event_seq=s.event_seq, evidence=dict(s.evidence)
                )
                for s in job.steps
            ],
            overdue=job.overdue,
        )


class ErasureJobList(BaseModel):
    items: list[ErasureJobOut]

    @classmethod
    def from_domain(cls, jobs: Sequence[ErasureJob]) -> ErasureJobList:
        return cls(items=[ErasureJobOut.from_domain(j) for j in jobs])


class LegalHoldIn(Strict):
    subject_id: SubjectId
    reason: str = Field(min_length=1, max_length=500)
    reference: str | None = Field(default=None, max_length=200)


class LegalHoldOut(BaseModel):
    id: str
    tenant_id: str
    reason: str
    reference: str | None
    placed_by: str
    placed_at: datetime
    lifted_at: datetime | None

    @classmethod
    def from_domain(cls, hold: LegalHold) -> LegalHoldOut:
        return cls(
            id=hold.id,
            tenant_id=hold.tenant_id,
            reason=hold.reason,
            reference=hold.reference,
            placed_by=hold.placed_by,
            placed_at=hold.placed_at,
            lifted_at=hold.lifted_at,
        )


class ReinstatementIn(Strict):
    subject_id: SubjectId
    reason: str = Field(min_length=1, max_length=500)


class ReinstatementOut(BaseModel):
    tenant_id: str
    generation: int
    reinstated_at: datetime

    @classmethod
    def from_domain(cls, r: Reinstatement) -> ReinstatementOut:
        return cls(tenant_id=r.tenant_id, generation=r.generation, reinstated_at=r.reinstated_at)
