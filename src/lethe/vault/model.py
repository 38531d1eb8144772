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


# The one trust order: verified > trusted > untrusted. What is built from memories is never
# trusted more than the least trusted of them (``memory.summaries``).
TRUST_RANK: dict[Trust, int] = {Trust.UNTRUSTED: 0, Trust.TRUSTED: 1, Trust.VERIFIED: 2}


def lowest_trust(first: Trust, *others: Trust) -> Trust:
    """The least trusted of the given levels."""
    return min((first, *others), key=TRUST_RANK.__getitem__)


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
    # The source types the credential may assert; None: whatever the role may write
    # (``vault.policy``), as for every token minted before tokens named them.
    source_types: frozenset[SourceType] | None = None

    def may_use(self, purpose: str) -> bool:
        return not self.purposes or purpose in self.purposes

    @property
    def writes_as(self) -> str:
        """The ``agent_id`` a memory this caller writes is recorded under (its own, if not an agent)."""
        return self.agent_id or f"{self.role.value}:{self.principal}"

    def wrote(self, agent_id: str) -> bool:
        """Whether a memory recorded under ``agent_id`` was written by this caller (review refuses it)."""
        return agent_id in (self.agent_id, f"{self.role.value}:{self.principal}")


# The parts of a provenance that say where a memory came from and may name a person (a
# profile URL, a document title, a tool call with an address in it): always sealed under the
# subject's key with the content (``custody.sealing``), never stored or logged in clear.
SEALED_ORIGIN = ("source_ref", "turn", "tool", "url", "document_ref")


@dataclass(frozen=True)
class Origins:
    """What a summary was built from, all the way down, as the vault recorded it at the write
    (``memory.summaries``): the memory ids it cites and those they cite in turn, their source
    types, and the lowest trust among them. Never a ``source_ref``: those identify people."""

    memory_ids: tuple[str, ...]
    source_types: tuple[str, ...]
    trust: Trust

    def as_dict(self) -> dict:
        return {
            "memory_ids": list(self.memory_ids),
            "source_types": list(self.source_types),
            "trust": self.trust.value,
        }

    @staticmethod
    def from_dict(d: dict) -> Origins:
        return Origins(tuple(d["memory_ids"]), tuple(d["source_types"]), Trust(d["trust"]))


@dataclass(frozen=True)
class Provenance:
    """Where a memory came from. ``source_type`` and ``sources`` (memory ids) are stored in
    clear; the fields of ``SEALED_ORIGIN`` travel only inside the sealed envelope, so a
    memory whose key is gone has them as None."""

    source_type: SourceType
    source_ref: str | None
    sources: tuple[str, ...] = ()
    turn: str | None = None
    tool: str | None = None
    url: str | None = None
    document_ref: str | None = None
    origins: Origins | None = None  # a summary's, recorded by the vault; a writer never gives it

    def as_dict(self) -> dict:
        d = {
            "source_type": str(self.source_type),
            "source_ref": self.source_ref,
            "sources": list(self.sources),
            "turn": self.turn,
            "tool": self.tool,
            "url": self.url,
            "document_ref": self.document_ref,
        }
        if self.origins is not None:
            d["origins"] = self.origins.as_dict()
        return d

    def clear_part(self) -> dict:
        """What the event payload and the ``memories`` row hold in clear (a summary's origins
        are memory ids and source types only: no reference to seal)."""
        d = {"source_type": str(self.source_type), "sources": list(self.sources)}
        if self.origins is not None:
            d["origins"] = self.origins.as_dict()
        return d

    def origin(self) -> dict[str, str]:
        """The sealed fields that are set (``SEALED_ORIGIN``): what the envelope carries."""
        return {f: v for f in SEALED_ORIGIN if (v := getattr(self, f)) is not None}


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
