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
from lethe.vault.memory.own_records import DEFAULT_PAGE, MAX_PAGE, OwnQuery
from lethe.vault.memory.search import MAX_LIMIT, MAX_QUERY_CHARS
from lethe.vault.memory.validation import MAX_URL, MAX_VERSION
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
    """Where a memory came from. Every field but ``source_type`` and ``sources`` is sealed
    under the subject's key with the content: never stored or logged in clear."""

    source_type: SourceType
    source_ref: str = Field(min_length=1, max_length=512, description="Session/turn, tool, document or URL.")
    sources: list[str] = Field(default_factory=list, max_length=1000)
    turn: str | None = Field(default=None, max_length=512, description="The conversation turn.")
    tool: str | None = Field(default=None, max_length=512, description="The tool whose result this is.")
    url: str | None = Field(
        default=None,
        max_length=MAX_URL,
        description="The page (absolute http(s) URL); required for web_page.",
    )
    document_ref: str | None = Field(
        default=None, max_length=512, description="The document it was read from."
    )

    def to_provenance(self) -> Provenance:
        return Provenance(
            self.source_type,
            self.source_ref,
            tuple(self.sources),
            turn=self.turn,
            tool=self.tool,
            url=self.url,
            document_ref=self.document_ref,
        )


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
            provenance=self.provenance.to_provenance(),
            idempotency_key=one_idempotency_key(self.idempotency_key, idempotency_key) or "",
            confidence=self.confidence,
            expires_at=self.expires_at,
            ttl_seconds=self.ttl_seconds,
            expected_version=self.expected_version,
            id=self.id,
            supersedes_id=self.supersedes_id,
        )


class OriginsOut(Out):
    """What a summary was built from, all the way down, as the vault recorded it."""

    memory_ids: list[str]
    source_types: list[SourceType]
    trust: Trust = Field(description="The lowest trust among them: the summary's never exceeds it.")


class ProvenanceOut(Out):
    """As written; the sealed fields are None where the memory's key is gone."""

    source_type: SourceType
    source_ref: str | None
    sources: list[str]
    turn: str | None = None
    tool: str | None = None
    url: str | None = None
    document_ref: str | None = None
    origins: OriginsOut | None = Field(default=None, description="A summary's: recorded by the vault.")


class MemoryOut(Out):
    """A memory; ``subject_id`` and ``content`` are decrypted for a caller in scope."""

    id: str
    tenant_id: str
    agent_id: str = Field(
        description="Its owner: the agent that wrote it, whose tokens may list and delete it."
    )
    # No ``subject_ref``: a stable pseudonym an agent keeps would link an erasure certificate to
    # the person (docs/verifying-erasure.md, "What a certificate can be linked to").
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


class MemoryListIn(Strict):
    """A page of the calling agent's own memories (``POST``: a subject id never sits in a URL)."""

    subject_id: SubjectId | None = None
    cursor: str | None = Field(
        default=None,
        min_length=1,
        max_length=200,
        pattern=r"^[A-Za-z0-9_-]+$",
        description="The next_cursor of the previous page.",
    )
    limit: int = Field(default=DEFAULT_PAGE, ge=1, le=MAX_PAGE, strict=True)

    def to_query(self) -> OwnQuery:
        return OwnQuery(subject_id=self.subject_id, cursor=self.cursor, limit=self.limit)


class MemoryPageOut(Out):
    """One page of the agent's active and quarantined memories, newest first (quarantined
    ones without their content until a reviewer promotes them)."""

    items: list[MemoryOut]
    next_cursor: str | None = Field(description="Pass as `cursor` for the next page; null on the last one.")
