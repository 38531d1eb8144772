"""Review and retraction: decision bodies, the review queue page, retraction requests and results."""

from __future__ import annotations

from pydantic import Field

from lethe.api.http.schemas.common import IdempotencyKeyField, Out, Strict
from lethe.api.http.schemas.memories import MAX_TTL_SECONDS, MemoryOut
from lethe.api.http.schemas.numbers import Version
from lethe.api.http.schemas.sessions import SessionTaintOut
from lethe.vault.memory.retraction import MAX_REASON, MAX_SOURCE_REF


class PromoteIn(Strict):
    expected_version: Version
    idempotency_key: IdempotencyKeyField = None
    reason: str | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_REASON,
        description="Why it is kept: required (else 422) for a memory an erasure's residue hunt queued "
        "(it mentions a person whose erasure was requested); stated in that erasure's certificate.",
    )


class RejectIn(PromoteIn):
    reason: str = Field(
        min_length=1,
        max_length=MAX_REASON,
        description="Why it is rejected; kept in the audit log, so never memory content or a subject id.",
    )


class RetentionIn(Strict):
    """A reviewer's confirmation: keep the memory ``ttl_seconds`` from now (default: its kind's
    default TTL), up to its kind's maximum; it only ever extends."""

    expected_version: Version
    ttl_seconds: int | None = Field(default=None, gt=0, le=MAX_TTL_SECONDS, strict=True)


class ReviewItemOut(MemoryOut):
    """A quarantined memory as a reviewer sees it: with the session taint that put it there, if
    one did (``vault.memory.agent_sessions``; a cause code and ids, never content)."""

    session_taint: SessionTaintOut | None = None


class ReviewQueueOut(Out):
    """One page of the quarantined memories of the reviewer's tenant, oldest first."""

    items: list[ReviewItemOut]
    next_cursor: str | None = Field(description="Pass as `cursor` for the next page; null on the last one.")


class RetractionIn(Strict):
    """Exactly one of ``memory_id`` and ``source_ref``."""

    memory_id: str | None = Field(default=None, min_length=1, max_length=64)
    source_ref: str | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_SOURCE_REF,
        description="Every memory of the tenant written from this source (its provenance.source_ref).",
    )
    reason: str = Field(
        min_length=1,
        max_length=MAX_REASON,
        description="Why; kept in the audit log, so never memory content or a subject id.",
    )
    dry_run: bool = Field(default=False, strict=True, description="List what would go; change nothing.")


class RetractionOut(Out):
    """What a retraction removed (202), or would remove (200, a dry run)."""

    id: str | None = Field(description="The retraction's id; null for a dry run.")
    dry_run: bool
    memory_ids: list[str] = Field(description="The memories retracted (by id, or written from the source).")
    derived_ids: list[str] = Field(description="The summaries built on them, retracted with them.")
