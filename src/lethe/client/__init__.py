"""``lethe.client``: a Python client for Lethe's HTTP API, sync and async, on httpx.

Install the ``client`` extra as docs/agents.md says (by the server's wheel URL). The client
imports httpx and the
standard library only: none of the server's stack (FastAPI, SQLAlchemy, ``lethe.vault``,
``lethe.api``) is loaded, and a test keeps it so.

    from lethe.client import LetheClient, Provenance
    with LetheClient("http://127.0.0.1:8080", token="lethe_...") as lethe:
        item = lethe.write_memory("customer-1001", "support", "preference",
                                  "Prefers email", Provenance("user_statement", "session-9/turn-4"))
        found = lethe.search_memories("contact preference", "support")

Modules: ``operations`` (every endpoint, once), ``calls`` (the call description, the
retry rules), ``errors`` (the exception tree), ``models`` (the results), ``sync`` and
``aio`` (the two clients), ``base`` (what they share).
"""

from lethe.client.aio import AsyncLetheClient
from lethe.client.calls import Retries
from lethe.client.errors import (
    Conflict,
    InvalidRequest,
    LetheError,
    NotFound,
    OutOfScope,
    ProblemError,
    RateLimited,
    ServerError,
    TooLarge,
    TransportError,
    Unauthenticated,
    Unavailable,
    UnexpectedResponse,
)
from lethe.client.models import (
    AuditFork,
    ConsistencyProof,
    ErasureAccepted,
    ErasureReport,
    ErasureRequest,
    ErasureStep,
    Health,
    Identity,
    InclusionProof,
    Kpis,
    LegalHold,
    Memory,
    MemoryPage,
    Origins,
    Provenance,
    PublicKey,
    Reinstatement,
    Score,
    ScoredMemory,
    SearchResult,
    TokenCreated,
)
from lethe.client.sync import LetheClient

__all__ = [
    "AsyncLetheClient",
    "AuditFork",
    "Conflict",
    "ConsistencyProof",
    "ErasureAccepted",
    "ErasureReport",
    "ErasureRequest",
    "ErasureStep",
    "Health",
    "Identity",
    "InclusionProof",
    "InvalidRequest",
    "Kpis",
    "LegalHold",
    "LetheClient",
    "LetheError",
    "Memory",
    "MemoryPage",
    "NotFound",
    "Origins",
    "OutOfScope",
    "ProblemError",
    "Provenance",
    "PublicKey",
    "RateLimited",
    "Reinstatement",
    "Retries",
    "Score",
    "ScoredMemory",
    "SearchResult",
    "ServerError",
    "TokenCreated",
    "TooLarge",
    "TransportError",
    "Unauthenticated",
    "Unavailable",
    "UnexpectedResponse",
]
