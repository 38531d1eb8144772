"""Erasure requests, legal holds and reinstatements, as privacy officers and auditors see them.

Who acted is a principal id (a token id) with, beside it, the display name the token
was given (``*_name``; null when it has none). Deadlines: ``due_at`` is one calendar
month after receipt, moved by extensions and by the time the clock was stopped;
``days_left`` counts whole days (negative once overdue) and stops while ``paused``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from lethe.api.http.schemas.common import IdempotencyKeyField, Out, Strict, SubjectId
from lethe.api.http.schemas.numbers import ExtensionMonths
from lethe.vault.erasure.model import ErasureJob, LegalHold
from lethe.vault.erasure.residue import MAX_IDENTIFIER_CHARS, MAX_IDENTIFIERS

IdentityRef = Field(
    default=None,
    min_length=1,
    max_length=200,
    description="Where the requester's identity was verified (a case or ticket id): a reference "
    "only, never identity documents.",
)


class ErasureRequestIn(Strict):
    subject_id: SubjectId
    legal_basis: str = Field(
        min_length=1,
        max_length=64,
        description="A code from the documented list (docs/erasure-semantics.md), e.g. gdpr-art17-1a; "
        "anything else is a 422 listing the accepted codes.",
    )
    reference: str | None = Field(default=None, max_length=200)
    identity_verification_ref: str | None = IdentityRef
    dry_run: bool = Field(
        default=False,
        description="Only preview what a forget would touch (200): nothing is filed.",
    )
    idempotency_key: IdempotencyKeyField = None
    identifiers: list[str] | None = Field(
        default=None,
        max_length=MAX_IDENTIFIERS,
        description=f"Up to {MAX_IDENTIFIERS} identifiers of the subject (names, e-mail addresses, phone or "
        f"account numbers; each at most {MAX_IDENTIFIER_CHARS} characters): other subjects' memories that "
        "mention them are found through the keyed search index and retracted or queued for review "
        "(`residue`). Kept only as keyed hashes, until the request completes.",
    )
    residue: Literal["retract", "review"] | None = Field(
        default=None,
        description="What happens to other subjects' memories that mention the identifiers: `retract` "
        "them, or `review` (queued for a reviewer, who keeps one with a reason or rejects it). "
        "Default `review` when identifiers are given.",
    )


class ExtensionIn(Strict):
    """One extension of the deadline (GDPR Art. 12(3)): at most two months in total."""

    months: ExtensionMonths
    reason: str = Field(min_length=1, max_length=500, description="Why the request needs longer.")
    subject_notified_at: datetime = Field(
        description="When the subject was told of the extension and its reasons (within the first month)."
    )


class ResumeIn(Strict):
    """Restarting the clock, optionally recording where the identity was verified."""

    identity_verification_ref: str | None = IdentityRef


VerificationCode = Field(
    description="Shown once, never stored: give it to the data subject. With it and the subject id, "
    "`lethe verify --subject-id ID --verification-code CODE` confirms whom the certificate is about; "
    "without it the certificate confirms no guess."
)


class ErasureAccepted(Out):
    """An erasure request just filed (the 202 answer), with its one-time verification code."""

    id: str
    status: str
    received_at: datetime
    due_at: datetime
    verification_code: str = VerificationCode


class ErasureStepOut(Out):
    """One completed step, with the evidence recorded in its audit event."""

    step: str
    completed_at: datetime
    event_seq: int
    evidence: dict[str, Any]


class ErasureExtensionOut(Out):
    """An extension granted: how many months, why, when the subject was told, and by whom."""

    number: int
    months: int
    reason: str
    subject_notified_at: datetime
    extended_at: datetime
    extended_by: str
    extended_by_name: str | None
    event_seq: int


class ErasureJobOut(Out):
    """An erasure request with its steps, their evidence and, once issued, its report id."""

    id: str
    tenant_id: str
    status: str
    legal_basis: str
    reference: str | None
    requested_by: str
    requested_by_name: str | None = Field(description="The display name of the requesting token, if any.")
    received_at: datetime
    due_at: datetime
    updated_at: datetime
    completed_at: datetime | None
    last_error: str | None
    report_id: str | None
    final_report_id: str | None = Field(
        default=None,
        description="Where the KMS scheduled the key's destruction: the final certificate, issued when "
        "the waiting window closed, chained to report_id's.",
    )
    steps: list[ErasureStepOut]
    overdue: bool
    days_left: int | None = Field(description="Whole days left before due_at; negative once overdue.")
    paused: bool = Field(description="The deadline clock is stopped (identity verification); nothing runs.")
    paused_at: datetime | None
    paused_seconds: int = Field(description="How long the clock stood still in earlier pauses.")
    extension_months: int
    extended_until: datetime | None
    extensions: list[ErasureExtensionOut]
    identity_verification_ref: str | None


class ErasureFiled(ErasureJobOut):
    """What ``lethe forget --json`` prints: the job, and the verification code shown once."""

    verification_code: str = VerificationCode


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
    placed_by_name: str | None
    placed_at: datetime
    lifted_at: datetime | None


class LegalHoldList(BaseModel):
    """Legal holds of the caller's tenant, oldest first."""

    items: list[LegalHoldOut]

    @classmethod
    def from_domain(cls, holds: Sequence[LegalHold]) -> LegalHoldList:
        return cls(items=[LegalHoldOut.from_domain(h) for h in holds])


class DerivedSummaryOut(Out):
    """Another subject's summary built on the subject's memories: the forget tombstones it too."""

    id: str
    status: str


class BackupHoldingOut(Out):
    """A backup taken after the subject's first event (it holds ciphertext under keys to be destroyed)."""

    id: str
    created_at: str


class OpenRequestOut(Out):
    """An erasure request for the subject that has not finished."""

    id: str
    status: str
    received_at: datetime
    due_at: datetime


class ErasurePreviewOut(Out):
    """What a forget of the subject would touch (``dry_run``: the 200 answer); nothing was changed."""

    memories: dict[str, int] = Field(description="The subject's memories by status.")
    memories_to_forget: int = Field(description="Those not yet forgotten: what the tombstone step forgets.")
    derived: list[DerivedSummaryOut] = Field(description="Other subjects' summaries built on them.")
    sealed_vectors: int
    index_entries: int
    key_generations: int = Field(description="Live key generations the forget would destroy.")
    backups: list[BackupHoldingOut]
    legal_holds: list[LegalHoldOut] = Field(description="Holds in force: a request would be refused (409).")
    open_requests: list[OpenRequestOut]
    nothing_held: bool = Field(description="No memory, no derived summary and no live key of the subject.")


class ReinstatementIn(Strict):
    subject_id: SubjectId
    reason: str = Field(min_length=1, max_length=500)


class ReinstatementOut(Out):
    """A reinstated subject: writes resume under this new key generation."""

    tenant_id: str
    generation: int
    reinstated_at: datetime
