"""Every operation of the HTTP API, once, as ``@operation`` functions (see ``lethe.client.calls``).

Each function is named after the route it calls (the route names of
``lethe.api.http.auth.ROUTE_ROLES``), builds the request and says how to read the answer.
A test compares these names with the routes the server serves, so a new endpoint shows up
as a missing method here. Ids in paths are percent-encoded; subject ids travel only in
bodies, as the API requires.

Exceptions: every method raises the ``lethe.client.errors`` tree: a ``ProblemError``
subclass for a refusal, ``TransportError`` when no answer came.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any, Literal, TypeVar
from urllib.parse import quote

import httpx

from lethe.client.calls import Call, operation
from lethe.client.errors import UnexpectedResponse
from lethe.client.models import (
    AuditFork,
    ConsistencyProof,
    ErasureAccepted,
    ErasureReport,
    ErasureRequest,
    Health,
    Identity,
    InclusionProof,
    Kpis,
    LegalHold,
    Memory,
    MemoryPage,
    Provenance,
    PublicKey,
    Reinstatement,
    SearchResult,
    TokenCreated,
    from_json,
)

T = TypeVar("T")
ReportFormat = Literal["json", "html", "pdf"]


def _json(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        raise UnexpectedResponse(f"{response.status_code} answer is not JSON") from None


def _model(cls: type[T]) -> Callable[[httpx.Response], T]:
    return lambda response: from_json(cls, _json(response))


def _items(cls: type[T]) -> Callable[[httpx.Response], list[T]]:
    return lambda response: [from_json(cls, item) for item in _json(response).get("items", [])]


def _nothing(response: httpx.Response) -> None:
    return None


def _text(response: httpx.Response) -> str:
    return response.text


def _report(response: httpx.Response) -> ErasureReport:
    media_type = response.headers.get("content-type", "application/octet-stream").split(";")[0]
    return ErasureReport(response.content, media_type)


def _id(value: str) -> str:
    return quote(value, safe="")


def _drop_none(body: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if v is not None}


def new_idempotency_key() -> str:
    """A fresh key for one logical write (every retry of it reuses the key)."""
    return uuid.uuid4().hex


class Operations:
    """The API's operations; ``LetheClient`` and ``AsyncLetheClient`` both inherit them."""

    # -- agents -----------------------------------------------------------------------

    @operation
    def write_memory(
        subject_id: str,
        purpose: str,
        kind: str,
        content: str,
        provenance: Provenance,
        *,
        confidence: float = 1.0,
        ttl_seconds: int | None = None,
        expires_at: datetime | None = None,
        expected_version: int = 0,
        memory_id: str | None = None,
        supersedes_id: str | None = None,
        idempotency_key: str | None = None,
        session_id: str | None = None,
    ) -> Call[Memory]:
        """Store a memory (or update ``memory_id`` at ``expected_version``, or supersede one).

        An idempotency key is generated unless given; retries resend it, so a write lost in
        transit is applied once and its retry returns the first result.
        """
        body = _drop_none(
            {
                "id": memory_id,
                "subject_id": subject_id,
                "purpose": purpose,
                "kind": kind,
                "content": content,
                "provenance": provenance.to_json(),
                "confidence": confidence,
                "ttl_seconds": ttl_seconds,
                "expires_at": expires_at.isoformat() if expires_at else None,
                "expected_version": expected_version,
                "supersedes_id": supersedes_id,
                "idempotency_key": idempotency_key or new_idempotency_key(),
                "session_id": session_id,  # or the client's session (its Lethe-Session header)
            }
        )
        return Call("POST", "/v1/memories", _model(Memory), json=body, retry=True)

    @operation
    def get_memory(memory_id: str) -> Call[Memory]:
        """One memory in the token's scope (``NotFound`` otherwise, whoever owns it)."""
        return Call("GET", f"/v1/memories/{_id(memory_id)}", _model(Memory), retry=True)

    @operation
    def search_memories(
        query: str,
        purpose: str,
        *,
        subject_id: str | None = None,
        kinds: Iterable[str] = (),
        limit: int = 10,
        token_budget: int = 2000,
        session_id: str | None = None,
    ) -> Call[SearchResult]:
        """Scoped, ranked recall of active memories within a token budget (reads nothing else)."""
        body = _drop_none(
            {
                "query": query,
                "purpose": purpose,
                "subject_id": subject_id,
                "kinds": list(kinds),
                "limit": limit,
                "token_budget": token_budget,
                "session_id": session_id,
            }
        )
        return Call("POST", "/v1/memories/search", _model(SearchResult), json=body, retry=True)

    @operation
    def list_memories(
        subject_id: str | None = None, cursor: str | None = None, *, limit: int | None = None
    ) -> Call[MemoryPage]:
        """One page of the token's agent's own active and quarantined memories, newest first
        (quarantined ones without content); pass ``next_cursor`` back for the next page."""
        body = _drop_none({"subject_id": subject_id, "cursor": cursor, "limit": limit})
        return Call("POST", "/v1/memories/list", _model(MemoryPage), json=body, retry=True)

    @operation
    def delete_memory(memory_id: str) -> Call[None]:
        """Retract one of the agent's own memories and the summaries citing it (``NotFound`` for
        any other). Resent safely: deleting a memory already retracted answers as the first time."""
        return Call("DELETE", f"/v1/memories/{_id(memory_id)}", _nothing, retry=True)

    @operation
    def taint_session(session_id: str, reason: str) -> Call[dict[str, Any]]:
        """Mark the agent's own session tainted: its later writes are quarantined whatever their
        source. The answer is the session's state (``tainted``, ``taint``, ``expires_at``)."""
        return Call(
            "POST", f"/v1/sessions/{_id(session_id)}/taint", _json, json={"reason": reason}, retry=True
        )

    # -- reviewers --------------------------------------------------------------------

    @operation
    def promote_memory(
        memory_id: str, expected_version: int, *, idempotency_key: str | None = None
    ) -> Call[Memory]:
        """Release a quarantined memory (active, verified). Keyed, so a retry returns the first result."""
        body = {
            "expected_version": expected_version,
            "idempotency_key": idempotency_key or new_idempotency_key(),
        }
        return Call("POST", f"/v1/memories/{_id(memory_id)}/promote", _model(Memory), json=body, retry=True)

    @operation
    def reject_memory(
        memory_id: str, expected_version: int, reason: str, *, idempotency_key: str | None = None
    ) -> Call[Memory]:
        """Retract a quarantined memory (and summaries citing it). Keyed: a retry returns the first result."""
        body = {
            "expected_version": expected_version,
            "reason": reason,
            "idempotency_key": idempotency_key or new_idempotency_key(),
        }
        return Call("POST", f"/v1/memories/{_id(memory_id)}/reject", _model(Memory), json=body, retry=True)

    @operation
    def confirm_retention(
        memory_id: str, expected_version: int, *, ttl_seconds: int | None = None
    ) -> Call[Memory]:
        """Keep an active memory longer than its source allows (reviewers; never the writing agent)."""
        body: dict[str, object] = {"expected_version": expected_version}
        if ttl_seconds is not None:
            body["ttl_seconds"] = ttl_seconds
        return Call("POST", f"/v1/memories/{_id(memory_id)}/retention", _model(Memory), json=body)

    @operation
    def list_review_queue(
        *,
        agent_id: str | None = None,
        purpose: str | None = None,
        source_type: str | None = None,
        older_than: int | None = None,
        cursor: str | None = None,
        limit: int = 50,
    ) -> Call[dict[str, Any]]:
        """One page of the tenant's quarantined memories: ``{items, next_cursor}`` (JSON)."""
        params = _drop_none(
            {
                "agent_id": agent_id,
                "purpose": purpose,
                "source_type": source_type,
                "older_than": older_than,
                "cursor": cursor,
                "limit": limit,
            }
        )
        return Call("GET", "/v1/review-queue", _json, params=params, retry=True)

    @operation
    def get_review_item(memory_id: str) -> Call[Memory]:
        """One quarantined memory of the tenant, decrypted, with its provenance."""
        return Call("GET", f"/v1/review-queue/{_id(memory_id)}", _model(Memory), retry=True)

    @operation
    def retract_memories(
        reason: str, *, memory_id: str | None = None, source_ref: str | None = None, dry_run: bool = False
    ) -> Call[dict[str, Any]]:
        """Retract one memory or everything from one source (``dry_run``: list what would go).

        Not resent: a lost answer may have retracted them; a dry run shows what is left."""
        body = _drop_none(
            {"memory_id": memory_id, "source_ref": source_ref, "reason": reason, "dry_run": dry_run}
        )
        return Call("POST", "/v1/retractions", _json, json=body, retry=dry_run)

    # -- privacy officers (and auditors, for reads) ------------------------------------

    @operation
    def request_erasure(
        subject_id: str, legal_basis: str, reference: str | None = None
    ) -> Call[ErasureAccepted]:
        """File a right-to-forget request; the server's runner completes it (poll ``get_erasure_request``)."""
        body = _drop_none({"subject_id": subject_id, "legal_basis": legal_basis, "reference": reference})
        return Call("POST", "/v1/erasure-requests", _model(ErasureAccepted), json=body)

    @operation
    def list_erasure_requests(status: str | None = None, overdue: bool = False) -> Call[list[ErasureRequest]]:
        params = _drop_none({"status": status, "overdue": "true" if overdue else None})
        return Call("GET", "/v1/erasure-requests", _items(ErasureRequest), params=params, retry=True)

    @operation
    def get_erasure_request(request_id: str) -> Call[ErasureRequest]:
        """One request with its steps, evidence and (once issued) its report id."""
        path = f"/v1/erasure-requests/{_id(request_id)}"
        return Call("GET", path, _model(ErasureRequest), retry=True)

    @operation
    def extend_erasure_request(
        request_id: str, months: int, reason: str, subject_notified_at: datetime
    ) -> Call[ErasureRequest]:
        """Extend the deadline (GDPR Art. 12(3)): at most two further months in total."""
        body = {"months": months, "reason": reason, "subject_notified_at": subject_notified_at.isoformat()}
        path = f"/v1/erasure-requests/{_id(request_id)}/extensions"
        return Call("POST", path, _model(ErasureRequest), json=body)

    @operation
    def pause_erasure_request(request_id: str) -> Call[ErasureRequest]:
        """Stop the deadline clock while the requester's identity is verified."""
        path = f"/v1/erasure-requests/{_id(request_id)}/pause"
        return Call("POST", path, _model(ErasureRequest), retry=True)

    @operation
    def resume_erasure_request(
        request_id: str, *, identity_verification_ref: str | None = None
    ) -> Call[ErasureRequest]:
        """Start the clock again (the due date moves by the paused time)."""
        body = _drop_none({"identity_verification_ref": identity_verification_ref})
        path = f"/v1/erasure-requests/{_id(request_id)}/resume"
        return Call("POST", path, _model(ErasureRequest), json=body, retry=True)

    @operation
    def list_legal_holds(*, active: bool | None = None) -> Call[list[LegalHold]]:
        """The tenant's legal holds (``active=True``: only those not lifted)."""
        params = _drop_none({"active": active})
        return Call("GET", "/v1/legal-holds", _items(LegalHold), params=params, retry=True)

    @operation
    def request_subject_access(subject_id: str, format: ReportFormat = "json") -> Call[ErasureReport]:
        """The subject's signed export (GDPR Art. 15/20) as JSON, HTML or PDF bytes."""
        params = {} if format == "json" else {"format": format}
        body = {"subject_id": subject_id}
        return Call("POST", "/v1/subject-access-requests", _report, json=body, params=params, retry=True)

    @operation
    def place_legal_hold(subject_id: str, reason: str, reference: str | None = None) -> Call[LegalHold]:
        body = _drop_none({"subject_id": subject_id, "reason": reason, "reference": reference})
        return Call("POST", "/v1/legal-holds", _model(LegalHold), json=body)

    @operation
    def lift_legal_hold(hold_id: str) -> Call[None]:
        return Call("DELETE", f"/v1/legal-holds/{_id(hold_id)}", _nothing)

    @operation
    def reinstate_subject(subject_id: str, reason: str) -> Call[Reinstatement]:
        """Lift the erasure fence of a forgotten subject (a new key generation)."""
        body = {"subject_id": subject_id, "reason": reason}
        return Call("POST", "/v1/subject-reinstatements", _model(Reinstatement), json=body)

    @operation
    def get_erasure_report(report_id: str, format: ReportFormat = "json") -> Call[ErasureReport]:
        """The signed certificate as served (verify it offline with ``lethe verify``), or HTML / PDF."""
        params = {"format": format} if format != "json" else None
        path = f"/v1/erasure-reports/{_id(report_id)}"
        return Call("GET", path, _report, params=params, retry=True)

    # -- auditors ----------------------------------------------------------------------

    @operation
    def get_audit_checkpoint() -> Call[str]:
        """A signed C2SP checkpoint note of the audit log."""
        return Call("GET", "/v1/audit/checkpoint", _text, retry=True)

    @operation
    def get_audit_public_key() -> Call[PublicKey]:
        return Call("GET", "/v1/audit/public-key", _model(PublicKey), retry=True)

    @operation
    def get_audit_kpis() -> Call[Kpis]:
        """The attributed-memory KPIs of the auditor's tenant (counts, shares, durations; never content)."""
        return Call("GET", "/v1/audit/kpis", _model(Kpis), retry=True)

    @operation
    def get_audit_public_key_pem() -> Call[str]:
        """The same key as PEM text, to save as the file ``lethe verify --public-key`` reads."""
        return Call("GET", "/v1/audit/public-key.pem", _text, retry=True)

    @operation
    def get_inclusion_proof(index: int, tree_size: int) -> Call[InclusionProof]:
        params = {"index": index, "tree_size": tree_size}
        return Call("GET", "/v1/audit/proofs/inclusion", _model(InclusionProof), params=params, retry=True)

    @operation
    def get_consistency_proof(first: int, second: int) -> Call[ConsistencyProof]:
        params = {"first": first, "second": second}
        path = "/v1/audit/proofs/consistency"
        return Call("GET", path, _model(ConsistencyProof), params=params, retry=True)

    @operation
    def list_audit_forks() -> Call[list[AuditFork]]:
        """Where restores of older backups forked the audit log, and the erasures they re-applied."""
        return Call("GET", "/v1/audit/forks", _items(AuditFork), retry=True)

    # -- admins --------------------------------------------------------------------------

    @operation
    def create_token(
        role: str,
        *,
        agent_id: str | None = None,
        purposes: Iterable[str] = (),
        ttl_seconds: int | None = None,
        description: str | None = None,
        source_types: Iterable[str] | None = None,
    ) -> Call[TokenCreated]:
        """Mint a token in the admin's tenant; the secret is in the answer only. ``source_types``:
        what its writes may assert (None: its role's default)."""
        body = _drop_none(
            {
                "role": role,
                "agent_id": agent_id,
                "purposes": list(purposes),
                "ttl_seconds": ttl_seconds,
                "description": description,
                "source_types": None if source_types is None else list(source_types),
            }
        )
        return Call("POST", "/v1/admin/tokens", _model(TokenCreated), json=body)

    @operation
    def list_tokens() -> Call[list[dict[str, Any]]]:
        """The tenant's tokens (ids, scope, names; never secrets)."""
        return Call("GET", "/v1/admin/tokens", lambda r: list(_json(r).get("items", [])), retry=True)

    @operation
    def revoke_token(token_id: str) -> Call[None]:
        """Revoke a token at once (by id)."""
        return Call("DELETE", f"/v1/admin/tokens/{_id(token_id)}", _nothing, retry=True)

    @operation
    def whoami() -> Call[Identity]:
        """The token's own tenant, role, agent, purposes and source types (any role)."""
        return Call("GET", "/v1/whoami", _model(Identity), retry=True)

    # -- webhooks (an admin or a privacy officer) -------------------------------------------

    @operation
    def create_webhook(url: str, events: Iterable[str], *, secret: str | None = None) -> Call[dict[str, Any]]:
        """Subscribe ``url`` to request events; the answer holds the signing secret, this once."""
        body = _drop_none({"url": url, "events": list(events), "secret": secret})
        return Call("POST", "/v1/admin/webhooks", _json, json=body)

    @operation
    def list_webhooks() -> Call[list[dict[str, Any]]]:
        """The tenant's subscriptions (never their secrets)."""
        return Call("GET", "/v1/admin/webhooks", lambda r: list(_json(r).get("items", [])), retry=True)

    @operation
    def delete_webhook(webhook_id: str) -> Call[None]:
        """End a subscription; deliveries not yet sent are not sent."""
        return Call("DELETE", f"/v1/admin/webhooks/{_id(webhook_id)}", _nothing, retry=True)

    @operation
    def list_webhook_deliveries(webhook_id: str) -> Call[list[dict[str, Any]]]:
        """A subscription's deliveries with their attempts (status and time, never bodies)."""
        path = f"/v1/admin/webhooks/{_id(webhook_id)}/deliveries"
        return Call("GET", path, lambda r: list(_json(r).get("items", [])), retry=True)

    @operation
    def replay_webhook_delivery(webhook_id: str, delivery_id: str) -> Call[None]:
        """Send a delivery again, under the same ``webhook-id``."""
        path = f"/v1/admin/webhooks/{_id(webhook_id)}/deliveries/{_id(delivery_id)}/replay"
        return Call("POST", path, _nothing)

    # -- health (no token needed) ----------------------------------------------------------

    @operation
    def healthz() -> Call[Health]:
        return Call("GET", "/healthz", _model(Health), retry=True)

    @operation
    def readyz() -> Call[Health]:
        """Ready to serve; ``Unavailable`` names the failed checks otherwise."""
        return Call("GET", "/readyz", _model(Health), retry=True)
