"""Request and response bodies of the HTTP API (pydantic), apart from domain objects.

Every request model forbids unknown fields: a body naming ``tenant_id`` or
``agent_id`` is a 422, because scope comes from the token and a silently ignored
field would let a client believe it chose its tenant. Response models are built from
domain objects with ``from_domain`` so the wire format is stated in one place.

Every number a request accepts is bounded, so none reaches an overflow in the clock,
the store or the request hash, and strict (``"10"`` or ``true`` is not a number; an int
is still a float). Strict per field, not model-wide: FastAPI validates the parsed JSON
as Python objects, where a strict datetime would refuse the ISO 8601 strings
``expires_at`` arrives as.

Exceptions: pydantic's ``ValidationError`` (rendered as a 422 problem by FastAPI).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import Header
from fastapi import Path as PathParam
from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, field_validator

from lethe.vault.access.tokens import MAX_TOKEN_TTL, TokenInfo
from lethe.vault.errors import InvalidCommand
from lethe.vault.memory.search import MAX_LIMIT, MAX_QUERY_CHARS
from lethe.vault.memory.validation import MAX_VERSION
from lethe.vault.model import (
    Authority,
    Kind,
    MemoryItem,
    Provenance,
    Role,
    SearchQuery,
    SearchResult,
    SourceType,
    Status,
    Trust,
    WriteCommand,
)

MAX_TTL_SECONDS = 10 * 365 * 86400  # above every kind's maximum (5 years at most); the core checks the kind
MAX_TOKEN_BUDGET = 1_000_000


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")

    @field_validator("*", mode="after")
    @classmethod
    def _no_nul(cls, value: Any) -> Any:
        """PostgreSQL text cannot hold NUL; refuse it here as a 422 rather than fail as a 500."""
        values = value if isinstance(value, list) else [value]
        if any(isinstance(v, str) and "\x00" in v for v in values):
            raise ValueError("must not contain NUL characters")
        return value


# Ids in URLs: uuids in practice; anything else is refused before it reaches a query.
ResourceId = Annotated[str, PathParam(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9._:-]+$")]
IdempotencyHeader = Annotated[
    str | None, Header(alias="Idempotency-Key", min_length=1, max_length=128, pattern=r"^[\x21-\x7e]+$")
]


SubjectId = Annotated[
    str, Field(min_length=1, max_length=256, description="The data subject; only ever sent in bodies.")
]


# -- memories ---------------------------------------------------------------------------


class ProvenanceIn(Strict):
    source_type: SourceType
    source_ref: str = Field(min_length=1, max_length=512, description="Session/turn, tool, document or URL.")
    sources: list[str] = Field(default_factory=list, max_length=1000)


class MemoryWrite(Strict):
    id: str | None = Field(default=None, max_length=36, description="Set to update an existing memory.")
    subject_id: SubjectId
    purpose: str = Field(min_length=1, max_length=64)
    kind: Kind
    content: str = Field(min_length=1)
    provenance: ProvenanceIn
    confidence: float = Field(default=1.0, ge=0, le=1, strict=True)
    expires_at: AwareDatetime | None = None
    ttl_seconds: int | None = Field(default=None, gt=0, le=MAX_TTL_SECONDS, strict=True)
    expected_version: int = Field(
        default=0, ge=0, le=MAX_VERSION, strict=True, description="0 when new, else the current version."
    )
    supersedes_id: str | None = Field(default=None, max_length=36)
    idempotency_key: str | None = Field(
        default=None, min_length=1, max_length=128, description="Or the Idempotency-Key header."
    )

    def to_command(self, idempotency_key: str | None) -> WriteCommand:
        """The core's command; the idempotency key may come from the header instead of the body."""
        if self.idempotency_key and idempotency_key and self.idempotency_key != idempotency_key:
            raise InvalidCommand("the Idempotency-Key header and the idempotency_key field differ")
        return WriteCommand(
            subject_id=self.subject_id,
            purpose=self.purpose,
            kind=self.kind.value,
            content=self.content,
            provenance=Provenance(
                self.provenance.source_type, self.provenance.source_ref, tuple(self.provenance.sources)
            ),
            idempotency_key=self.idempotency_key or idempotency_key or "",
            confidence=self.confidence,
            expires_at=self.expires_at,
            ttl_seconds=self.ttl_seconds,
            expected_version=self.expected_version,
            id=self.id,
            supersedes_id=self.supersedes_id,
        )


class ProvenanceOut(BaseModel):
    source_type: SourceType
    source_ref: str
    sources: list[str]


class MemoryOut(BaseModel):
    id: str
    tenant_id: str
    agent_id: str
    subject_ref: str
    subject_id: str | None
    purpose: str
    kind: Kind
    content: str | None
    content_hmac: str
    provenance: ProvenanceOut
    authority: Authority
    trust: Trust
    confidence: float
    created_at: datetime
    expires_at: datetime
    version: int
    status: Status
    supersedes_id: str | None
    idempotency_key: str | None

    @classmethod
    def fields_of(cls, item: MemoryItem) -> dict[str, Any]:
        return {
            "id": item.id,
            "tenant_id": item.tenant_id,
            "agent_id": item.agent_id,
            "subject_ref": item.subject_ref,
            "subject_id": item.subject_id,
            "purpose": item.purpose,
            "kind": item.kind,
            "content": item.content,
            "content_hmac": item.content_hmac,
            "provenance": ProvenanceOut(
                source_type=item.provenance.source_type,
                source_ref=item.provenance.source_ref,
                sources=list(item.provenance.sources),
            ),
            "authority": item.authority,
            "trust": item.trust,
            "confidence": item.confidence,
            "created_at": item.created_at,
            "expires_at": item.expires_at,
            "version": item.version,
            "status": item.status,
            "supersedes_id": item.supersedes_id,
            "idempotency_key": item.idempotency_key,
        }

    @classmethod
    def from_domain(cls, item: MemoryItem) -> MemoryOut:
        return cls(**cls.fields_of(item))


class Score(BaseModel):
    lexical: float
    confidence: float
    recency: float
    total: float


class ScoredMemoryOut(MemoryOut):
    score: Score

    @classmethod
    def from_domain(cls, item: MemoryItem) -> ScoredMemoryOut:
        return cls(**cls.fields_of(item), score=Score(**(item.score or {})))


class SearchIn(Strict):
    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    purpose: str = Field(min_length=1, max_length=64)
    subject_id: str | None = Field(default=None, min_length=1, max_length=256)
    kinds: list[Kind] = Field(default_factory=list, max_length=5)
    limit: int = Field(default=10, ge=1, le=MAX_LIMIT, strict=True)
    token_budget: int = Field(default=2000, ge=1, le=MAX_TOKEN_BUDGET, strict=True)

    def to_query(self) -> SearchQuery:
        return SearchQuery(
            query=self.query,
            purpose=self.purpose,
            subject_id=self.subject_id,
            kinds=tuple(k.value for k in self.kinds),
            limit=self.limit,
            token_budget=self.token_budget,
        )


class SearchOut(BaseModel):
    items: list[ScoredMemoryOut]
    used_tokens: int
    skipped_over_budget: int

    @classmethod
    def from_domain(cls, result: SearchResult) -> SearchOut:
        return cls(
            items=[ScoredMemoryOut.from_domain(i) for i in result.items],
            used_tokens=result.used_tokens,
            skipped_over_budget=result.skipped_over_budget,
        )


class PromoteIn(Strict):
    expected_version: int = Field(ge=1, le=MAX_VERSION, strict=True)


# -- tokens -----------------------------------------------------------------------------


class TokenCreate(Strict):
    role: Role
    tenant_id: str | None = Field(
        default=None, max_length=64, description="Optional; must be the admin's own tenant."
    )
    agent_id: str | None = Field(default=None, max_length=64, description="Required for agent tokens.")
    purposes: list[str] = Field(default_factory=list, max_length=50)
    ttl_seconds: int | None = Field(default=None, gt=0, le=int(MAX_TOKEN_TTL.total_seconds()), strict=True)
    description: str | None = Field(default=None, max_length=200)


class TokenOut(BaseModel):
    id: str
    role: Role
    tenant_id: str
    agent_id: str | None
    purposes: list[str]
    description: str | None
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None

    @classmethod
    def fields_of(cls, info: TokenInfo) -> dict[str, Any]:
        return {
            "id": info.id,
            "role": info.role,
            "tenant_id": info.tenant_id,
            "agent_id": info.agent_id,
            "purposes": list(info.purposes),
            "description": info.description,
            "created_at": info.created_at,
            "expires_at": info.expires_at,
            "revoked_at": info.revoked_at,
        }


class TokenCreated(TokenOut):
    token: str = Field(description="The bearer token. Shown once; only its hash is stored.")

    @classmethod
    def from_domain(cls, token: str, info: TokenInfo) -> TokenCreated:
        return cls(token=token, **cls.fields_of(info))


# -- erasure, legal holds, reinstatement --------------------------------------------------


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
    def from_domain(cls, job: Any) -> ErasureAccepted:
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
    def from_domain(cls, job: Any) -> ErasureJobOut:
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
    def from_domain(cls, hold: Any) -> LegalHoldOut:
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
    def from_domain(cls, r: Any) -> ReinstatementOut:
        return cls(tenant_id=r.tenant_id, generation=r.generation, reinstated_at=r.reinstated_at)


# -- health -------------------------------------------------------------------------------


class Health(BaseModel):
    status: str
    checks: dict[str, str] | None = Field(default=None, description="Readiness: each check and its result.")
