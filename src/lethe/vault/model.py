"""Domain objects of the memory core: plain dataclasses, no storage or web types."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum


class Kind(StrEnum):
    PREFERENCE = "preference"
    FACT = "fact"
    SKILL = "skill"
    TASK_SUMMARY = "task_summary"
    WORKING_NOTE = "working_note"


class Status(StrEnum):
    QUARANTINED = "quarantined"
    ACTIVE = "active"
    SUPERSEDED = "superseded"
    EXPIRED = "expired"
    RETRACTED = "retracted"  # removed as wrong or poisoned; the subject and its key are untouched
    FORGOTTEN = "forgotten"


# A memory in one of these states has left retrieval for good and holds no ciphertext.
GONE = frozenset({Status.RETRACTED, Status.FORGOTTEN})


class SourceType(StrEnum):
    USER_STATEMENT = "user_statement"
    OPERATOR_CONFIG = "operator_config"
    TOOL_RESULT = "tool_result"
    WEB_PAGE = "web_page"
    AGENT_INFERENCE = "agent_inference"
    SUMMARY = "summary"


class Authority(StrEnum):
    OPERATOR = "operator"
    USER = "user"
    AGENT = "agent"
    EXTERNAL = "external"


class Trust(StrEnum):
    VERIFIED = "verified"
    TRUSTED = "trusted"
    UNTRUSTED = "untrusted"


class Role(StrEnum):
    AGENT = "agent"
    OPERATOR = "operator"
    REVIEWER = "reviewer"
    PRIVACY_OFFICER = "privacy_officer"
    AUDITOR = "auditor"
    ADMIN = "admin"


@dataclass(frozen=True)
class Caller:
    """Who is acting. Built from a credential, never from a request body."""

    tenant_id: str
    role: Role
    agent_id: str | None = None
    purposes: frozenset[str] = frozenset()
    principal: str = "system"

    def may_use(self, purpose: str) -> bool:
        return not self.purposes or purpose in self.purposes

    @property
    def writes_as(self) -> str:
        """The ``agent_id`` a memory this caller writes is recorded under (its own, if not an agent)."""
        return self.agent_id or f"{self.role.value}:{self.principal}"

    def wrote(self, agent_id: str) -> bool:
        """Whether a memory recorded under ``agent_id`` was written by this caller (review refuses it)."""
        return agent_id in (self.agent_id, f"{self.role.value}:{self.principal}")


@dataclass(frozen=True)
class Provenance:
    source_type: SourceType
    source_ref: str
    sources: tuple[str, ...] = ()

    def as_dict(self) -> dict:
        return {
            "source_type": str(self.source_type),
            "source_ref": self.source_ref,
            "sources": list(self.sources),
        }


@dataclass(frozen=True)
class WriteCommand:
    """A request to store (or update, or supersede) one memory."""

    subject_id: str
    purpose: str
    kind: str
    content: str
    provenance: Provenance | None
    idempotency_key: str
    confidence: float = 1.0
    expires_at: datetime | None = None
    ttl_seconds: int | None = None
    expected_version: int = 0
    id: str | None = None
    supersedes_id: str | None = None


@dataclass(frozen=True)
class SessionTaint:
    """Why a session is tainted: a cause code, when, and the tainting memory's id or the
    caller's reason. Never content: it is kept in clear, beside the quarantined writes."""

    cause: str
    tainted_at: str  # ISO-8601 UTC (``clock.iso``)
    memory_id: str | None = None
    reason: str | None = None

    def to_json(self) -> str:
        fields = {"cause": self.cause, "tainted_at": self.tainted_at}
        if self.memory_id is not None:
            fields["memory_id"] = self.memory_id
        if self.reason is not None:
            fields["reason"] = self.reason
        return json.dumps(fields, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> SessionTaint:
        d = json.loads(text)
        return cls(d["cause"], d["tainted_at"], d.get("memory_id"), d.get("reason"))


@dataclass(frozen=True)
class MemoryItem:
    """A memory as callers in scope see it (content decrypted)."""

    id: str
    tenant_id: str
    agent_id: str
    subject_ref: str
    subject_id: str | None
    purpose: str
    kind: Kind
    content: str | None
    content_hmac: str
    provenance: Provenance
    authority: Authority
    trust: Trust
    confidence: float
    created_at: datetime
    expires_at: datetime
    version: int
    status: Status
    supersedes_id: str | None
    idempotency_key: str | None
    # Why this write was quarantined: its session was tainted (``memory.agent_sessions``).
    session_taint: SessionTaint | None = None
    score: dict[str, float] | None = field(default=None)  # last: ``memory.kept_results``


@dataclass(frozen=True)
class SearchQuery:
    query: str
    purpose: str
    subject_id: str | None = None
    kinds: tuple[str, ...] = ()
    limit: int = 10
    token_budget: int = 2000


@dataclass(frozen=True)
class SearchResult:
    items: list[MemoryItem]
    used_tokens: int
    skipped_over_budget: int
    recall: str = "lexical"  # "hybrid" when sealed vectors ranked the scope too (memory.search)
