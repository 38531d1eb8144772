"""Erasure requests, legal holds and reinstatements, as privacy officers and auditors see them."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from lethe.api.http.schemas.common import Out, Strict, SubjectId
from lethe.vault.erasure.model import ErasureJob


class ErasureRequestIn(Strict):
    subject_id: SubjectId
    legal_basis: str = Field(min_length=1, max_length=64, description="e.g. gdpr-art17-1a")
    reference: str | None = Field(default=None, max_length=200)


class ErasureAccepted(Out):
    """An erasure request just filed (the 202 answer)."""

    id: str
    status: str
    received_at: datetime
    due_at: datetime


class ErasureStepOut(Out):
    """One completed step, with the evidence recorded in its audit event."""

    step: str
    completed_at: datetime
    event_seq: int
    evidence: dict[str, Any]


class ErasureJobOut(Out):
    """An erasure request with its steps, their evidence and, once issued, its report id."""

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


class ErasureJobList(BaseModel):
    """Erasure requests of the caller's tenant."""

    items: list[ErasureJobOut]

    @classmethod
    def from_domain(cls, jobs: Sequence[ErasureJob]) -> ErasureJobList:
        return cls(items=[ErasureJobOut.from_domain(j) for j in jobs])


class LegalHoldIn(Strict):
    subject_id: SubjectId
    reason: str = Field(min_length=1, max_length=500)
    reference: str | None = Field(default=None, max_length=200)


class LegalHoldOut(Out):
    """A legal hold on a subject (the subject itself is never shown)."""

    id: str
    tenant_id: str
    reason: str
    reference: str | None
    placed_by: str
    placed_at: datetime
    lifted_at: datetime | None


class ReinstatementIn(Strict):
    subject_id: SubjectId
    reason: str = Field(min_length=1, max_length=500)


class ReinstatementOut(Out):
    """A reinstated subject: writes resume under this new key generation."""

    tenant_id: str
    generation: int
    reinstated_at: datetime
