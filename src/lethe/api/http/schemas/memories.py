"""Memories: the write and search bodies, items as agents see them."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import AwareDatetime, BaseModel, Field

from lethe.api.http.schemas.common import (
    IdempotencyKeyField,
    Out,
    SessionIdField,
    Strict,
    SubjectId,
    one_idempotency_key,
)
from lethe.vault.memory.search import MAX_LIMIT, MAX_QUERY_CHARS
from lethe.vault.memory.validation import MAX_VERSION
from lethe.vault.model import (
    Authority,
    Kind,
    Provenance,
    SearchQuery,
    SourceType,
    Status,
    Trust,
    WriteCommand,
)

MAX_TTL_SECONDS = 10 * 365 * 86400  # above every kind's maximum (5 years at most); the core checks the kind
MAX_TOKEN_BUDGET = 1_000_000


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
    idempotency_key: IdempotencyKeyField = None
    session_id: SessionIdField = None

    def to_command(self, idempotency_key: str | None) -> WriteCommand:
        """The core's command; the idempotency key may come from the header instead of the body."""
        return WriteCommand(
            subject_id=self.subject_id,
            purpose=self.purpose,
            kind=self.kind.value,
            content=self.content,
            provenance=Provenance(
                self.provenance.source_type, self.provenance.source_ref, tuple(self.provenance.sources)
            ),
            idempotency_key=one_idempotency_key(self.idempotency_key, idempotency_key) or "",
            confidence=self.confidence,
            expires_at=self.expires_at,
            ttl_seconds=self.ttl_seconds,
            expected_version=self.expected_version,
            id=self.id,
            supersedes_id=self.supersedes_id,
        )


class ProvenanceOut(Out):
    source_type: SourceType
    source_ref: str
    sources: list[str]


class MemoryOut(Out):
    """A memory; ``subject_id`` and ``content`` are decrypted for a caller in scope."""

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


class Score(BaseModel):
    """The parts of a search score and their weighted total (``vault.memory.ranking``)."""

    lexical: float
    semantic: float = 0.0  # cosine with the query (0 when the search was lexical only)
    authority: float
    trust: float
    confidence: float
    recency: float
    total: float


class ScoredMemoryOut(MemoryOut):
    """A memory found by a search, with its score."""

    score: Score


class SearchIn(Strict):
    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    purpose: str = Field(min_length=1, max_length=64)
    subject_id: str | None = Field(default=None, min_length=1, max_length=256)
    kinds: list[Kind] = Field(default_factory=list, max_length=5)
    limit: int = Field(default=10, ge=1, le=MAX_LIMIT, strict=True)
    token_budget: int = Field(default=2000, ge=1, le=MAX_TOKEN_BUDGET, strict=True)
    session_id: SessionIdField = None

    def to_query(self) -> SearchQuery:
        return SearchQuery(
            query=self.query,
            purpose=self.purpose,
            subject_id=self.subject_id,
            kinds=tuple(k.value for k in self.kinds),
            limit=self.limit,
            token_budget=self.token_budget,
        )


class SearchOut(Out):
    """What a search found within its token budget."""

    items: list[ScoredMemoryOut]
    used_tokens: int
    skipped_over_budget: int
    recall: Literal["hybrid", "lexical"] = "lexical"  # hybrid: sealed vectors ranked the scope too
