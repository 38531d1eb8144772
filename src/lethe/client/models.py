"""What the client returns: frozen dataclasses read from the server's JSON.

Each class mirrors one response body of the HTTP API (``api/http/schemas``); a field the
server adds later is ignored until the class names it, so an older client keeps working
against a newer server. Enumerated values (kind, status, trust, role, ...) stay strings
for the same reason. ``from_json(cls, data)`` does the reading for every class.

Exceptions: ``UnexpectedResponse`` when a body lacks a field the class requires.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from lethe.client.errors import UnexpectedResponse

T = TypeVar("T")


@dataclass(frozen=True)
class Origins:
    """What a summary was built from, all the way down, as the vault recorded it: memory ids,
    their source types, and the lowest trust among them (the summary's never exceeds it)."""

    memory_ids: tuple[str, ...]
    source_types: tuple[str, ...]
    trust: str


@dataclass(frozen=True)
class Provenance:
    """Where a memory came from: its source type, a reference to it, (summaries) its inputs, and
    optionally the turn, tool, page ``url`` (required for ``web_page``) and document. The
    server seals all but the type and the inputs under the subject's key; read back where the
    key is gone, they are None. ``origins`` is a summary's, recorded by the vault; a write
    never sends it."""

    source_type: str
    source_ref: str | None
    sources: tuple[str, ...] = ()
    turn: str | None = None
    tool: str | None = None
    url: str | None = None
    document_ref: str | None = None
    origins: Origins | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "source_type": self.source_type,
            "source_ref": self.source_ref,
            "sources": list(self.sources),
        }
        for name in ("turn", "tool", "url", "document_ref"):  # only those set: older servers refuse others
            if (value := getattr(self, name)) is not None:
                out[name] = value
        return out


@dataclass(frozen=True)
class Memory:
    """A memory; ``subject_id`` and ``content`` are decrypted for a token in scope."""

    id: str
    tenant_id: str
    agent_id: str
    subject_id: str | None  # no subject_ref: servers stopped sending it (older ones' is ignored)
    purpose: str
    kind: str
    content: str | None
    content_hmac: str
    provenance: Provenance
    authority: str
    trust: str
    confidence: float
    created_at: datetime
    expires_at: datetime
    version: int
    status: str
    supersedes_id: str | None
    idempotency_key: str | None


@dataclass(frozen=True)
class Score:
    lexical: float
    confidence: float
    recency: float
    total: float
    authority: float = 0.0  # the writer's standing (servers before issue 12 send none)
    trust: float = 0.0
    semantic: float = 0.0  # cosine with the query (servers before issue 16 send none)


@dataclass(frozen=True)
class ScoredMemory(Memory):
    """A memory a search found, with its score."""

    score: Score | None = None


@dataclass(frozen=True)
class SearchResult:
    """What a search found within its token budget."""

    items: list[ScoredMemory]
    used_tokens: int
    skipped_over_budget: int
    recall: str = "lexical"  # "hybrid" when sealed vectors ranked the scope too


@dataclass(frozen=True)
class MemoryPage:
    """One page of the agent's own memories, newest first; ``next_cursor`` is None on the last."""

    items: list[Memory]
    next_cursor: str | None = None


@dataclass(frozen=True)
class ErasureAccepted:
    """An erasure request just filed; the server's runner carries it out.

    ``verification_code`` is shown this once and never stored: give it to the data
    subject; with the subject id it confirms whom the certificate is about."""

    id: str
    status: str
    received_at: datetime
    due_at: datetime
    verification_code: str | None = field(default=None, repr=False)


@dataclass(frozen=True)
class ErasureStep:
    step: str
    completed_at: datetime
    event_seq: int
    evidence: dict[str, Any]


@dataclass(frozen=True)
class ErasureRequest:
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
    steps: list[ErasureStep]
    overdue: bool
    requested_by_name: str | None = None
    days_left: int | None = None
    paused: bool = False
    paused_at: datetime | None = None
    paused_seconds: int = 0
    extension_months: int = 0
    extended_until: datetime | None = None
    extensions: list[dict[str, Any]] = field(default_factory=list)
    identity_verification_ref: str | None = None
    final_report_id: str | None = None  # the final certificate, once a KMS's waiting window closed


@dataclass(frozen=True)
class LegalHold:
    id: str
    tenant_id: str
    reason: str
    reference: str | None
    placed_by: str
    placed_at: datetime
    lifted_at: datetime | None
    placed_by_name: str | None = None


@dataclass(frozen=True)
class Reinstatement:
    tenant_id: str
    generation: int
    reinstated_at: datetime


@dataclass(frozen=True)
class ErasureReport:
    """An erasure certificate as served: the signed JSON byte for byte, or its HTML / PDF rendering."""

    content: bytes
    media_type: str

    def json(self) -> dict[str, Any]:
        """The signed JSON certificate, parsed (for ``format="json"``)."""
        return json.loads(self.content)


@dataclass(frozen=True)
class PublicKey:
    origin: str
    pem: str
    key_id: str
    vkey: str
    fingerprint_sha256: str


@dataclass(frozen=True)
class Kpis:
    """The attributed-memory KPIs of the auditor's tenant (shares and durations None until measurable)."""

    tenant_id: str
    computed_at: datetime
    live_memories: int
    attribution_complete: int
    attribution_complete_share: float | None
    median_age_seconds: float | None
    expiry_due: int
    expired_on_time: int
    expired_on_time_share: float | None
    erasures_completed: int
    deletion_lag_p50_seconds: float | None
    deletion_lag_p95_seconds: float | None
    retractions: int
    memories_retracted: int
    derived_retracted: int
    open_requests: int
    overdue_requests: int


@dataclass(frozen=True)
class InclusionProof:
    index: int
    tree_size: int
    leaf_hash: str
    root: str
    proof: list[str]


@dataclass(frozen=True)
class ConsistencyProof:
    first: int
    second: int
    first_root: str
    second_root: str
    proof: list[str]


@dataclass(frozen=True)
class ReappliedErasure:
    tenant_id: str
    request_id: str


@dataclass(frozen=True)
class AuditFork:
    """Where restoring an older backup forked the audit log, and the erasures it re-applied."""

    id: str
    backup_id: str
    restored_at: str
    fork_tree_size: int
    abandoned_tree_size: int
    abandoned_checkpoints: list[str]
    reapplied: list[ReappliedErasure]
    event_seq: int


@dataclass(frozen=True)
class TokenCreated:
    """A freshly minted token: ``token`` is the secret, shown this once."""

    id: str
    role: str
    tenant_id: str
    agent_id: str | None
    purposes: list[str]
    description: str | None
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None
    token: str = field(repr=False)
    display_name: str | None = None
    email: str | None = None
    source_types: list[str] | None = None  # None: the role's default


@dataclass(frozen=True)
class Identity:
    """The calling token's scope (``GET /v1/whoami``): never its secret."""

    token_id: str
    tenant_id: str
    role: str
    agent_id: str | None
    purposes: list[str]
    source_types: list[str] | None = None


@dataclass(frozen=True)
class Health:
    status: str
    checks: dict[str, Any] | None = None


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def from_json(cls: type[T], data: Any) -> T:
    """An instance of the dataclass ``cls`` from a JSON object; unknown fields are ignored."""
    if not isinstance(data, Mapping):
        raise UnexpectedResponse(f"expected a JSON object for {cls.__name__}")
    hints = _hints(cls)
    values = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if f.name in data:
            values[f.name] = _convert(hints[f.name], data[f.name])
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise UnexpectedResponse(f"{cls.__name__} lacks the field {f.name!r}")
    return cls(**values)


def _convert(tp: Any, value: Any) -> Any:
    if value is None:
        return None
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        (inner,) = [a for a in typing.get_args(tp) if a is not type(None)]
        return _convert(inner, value)
    if origin in (list, tuple):
        if not isinstance(value, Sequence) or isinstance(value, str):
            raise UnexpectedResponse("expected a JSON array")
        items = [_convert(typing.get_args(tp)[0], v) for v in value]
        return items if origin is list else tuple(items)
    if tp is datetime:
        return datetime.fromisoformat(value)
    if tp is float:
        return float(value)
    if dataclasses.is_dataclass(tp):
        return from_json(tp, value)  # type: ignore[arg-type]
    return value
