"""Auditor endpoints: signed checkpoints, the public key, Merkle proofs, erasure reports.

Route names (the keys of ``api.auth.ROUTE_ROLES``) and who may call them:
- ``get_audit_checkpoint``   GET /v1/audit/checkpoint                      auditor
- ``get_audit_public_key``   GET /v1/audit/public-key                      auditor
- ``get_inclusion_proof``    GET /v1/audit/proofs/inclusion?index=&tree_size=  auditor
- ``get_consistency_proof``  GET /v1/audit/proofs/consistency?first=&second=   auditor
- ``get_erasure_report``     GET /v1/erasure-reports/{id}[?format=html|pdf]    privacy_officer, auditor

The audit tree spans every tenant; its endpoints reveal hashes and sizes only. Reports
are tenant-scoped: another tenant's report is a 404, indistinguishable from none.
The JSON report is served byte for byte as stored and signed (never re-serialised).

``router`` authorises through ``api.auth.authorised``; ``make_router(get_caller)``
builds the same routes over another caller dependency (tests, other apps).

Exceptions: core errors reach the problem handlers: ``InvalidCommand`` (422, a size
or index that does not exist), ``LogInconsistent`` (409, the log refused to sign),
``NotFound`` (404), ``OutOfScope`` (403), ``StoreUnavailable`` (503).
"""

# No ``from __future__ import annotations`` here: the routes are defined inside
# ``make_router`` and FastAPI must see their dependency annotations evaluated.
import base64
from collections.abc import Callable
from enum import StrEnum
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query, Request, Response
from pydantic import BaseModel, Field

from lethe.api.http.problems import problem_responses
from lethe.vault.model import Caller

__all__ = ["AUDIT_ROUTE_ROLES", "make_router", "router"]

AUDIT_ROUTE_ROLES: dict[str, tuple[str, ...]] = {
    "get_audit_checkpoint": ("auditor",),
    "get_audit_public_key": ("auditor",),
    "get_inclusion_proof": ("auditor",),
    "get_consistency_proof": ("auditor",),
    "get_erasure_report": ("privacy_officer", "auditor"),
}
"""The roles each route needs, for ``api.auth.ROUTE_ROLES`` (which is authoritative)."""

_NO_STORE = {"Cache-Control": "no-store"}


class PublicKeyOut(BaseModel):
    origin: str = Field(description="The checkpoint origin line, also the signed-note key name.")
    pem: str = Field(description="Ed25519 public key, SubjectPublicKeyInfo PEM.")
    key_id: str = Field(description="Hex of the 4-byte signed-note key id.")
    vkey: str = Field(description="The signed-note verifier key: name+keyid+base64(0x01||key).")
    fingerprint_sha256: str = Field(description="Hex SHA-256 of the raw 32-byte public key.")


class InclusionProofOut(BaseModel):
    index: int
    tree_size: int
    leaf_hash: str = Field(description="Base64 of the leaf hash at index.")
    root: str = Field(description="Base64 of the root of the tree of tree_size (compare with a checkpoint).")
    proof: list[str] = Field(description="RFC 9162 inclusion path, base64 hashes, leaf to root.")


class ConsistencyProofOut(BaseModel):
    first: int
    second: int
    first_root: str
    second_root: str
    proof: list[str] = Field(description="RFC 9162 consistency proof, base64 hashes.")


class ReportFormat(StrEnum):
    JSON = "json"
    HTML = "html"
    PDF = "pdf"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _container(request: Request) -> Any:
    return request.app.state.container


def make_router(get_caller: Callable[..., Caller]) -> APIRouter:
    """The audit routes, authorised by ``get_caller`` (which must enforce the roles above)."""
    r = APIRouter(tags=["audit"])
    CallerDep = Annotated[Caller, Depends(get_caller)]
    ContainerDep = Annotated[Any, Depends(_container)]

    @r.get(
        "/v1/audit/checkpoint",
        name="get_audit_checkpoint",
        response_class=Response,
        responses={
            200: {"description": "A C2SP signed checkpoint note", "content": {"text/plain": {}}},
            **problem_responses(401, 403, 409, 429, 503),
        },
    )
    def get_audit_checkpoint(caller: CallerDep, container: ContainerDep) -> Response:
        """A signed checkpoint of the current log (signed now if the log has grown)."""
        note = container.audit.checkpoint()
        return Response(note, media_type="text/plain; charset=utf-8")

    @r.get(
        "/v1/audit/public-key",
        name="get_audit_public_key",
        response_model=PublicKeyOut,
        responses=problem_responses(401, 403, 429, 503),
    )
    def get_audit_public_key(caller: CallerDep, container: ContainerDep) -> PublicKeyOut:
        """The key checkpoints and certificates are signed with (pin it out of band too)."""
        info = container.audit.public_key()
        return PublicKeyOut(
            origin=info.origin,
            pem=info.pem,
            key_id=info.key_id,
            vkey=info.vkey,
            fingerprint_sha256=info.fingerprint,
        )

    @r.get(
        "/v1/audit/proofs/inclusion",
        name="get_inclusion_proof",
        response_model=InclusionProofOut,
        responses=problem_responses(401, 403, 422, 429, 503),
    )
    def get_inclusion_proof(
        caller: CallerDep,
        container: ContainerDep,
        index: Annotated[int, Query(ge=0, le=2**53)],
        tree_size: Annotated[int, Query(ge=1, le=2**53)],
    ) -> InclusionProofOut:
        """The inclusion proof of leaf ``index`` (event ``seq = index + 1``) in the tree of ``tree_size``."""
        audit = container.audit
        proof = audit.inclusion_proof(index, tree_size)
        leaf = audit.leaf_hash(index)
        return InclusionProofOut(
            index=index,
            tree_size=tree_size,
            leaf_hash=_b64(leaf),
            root=_b64(audit.root(tree_size)),
            proof=[_b64(h) for h in proof],
        )

    @r.get(
        "/v1/audit/proofs/consistency",
        name="get_consistency_proof",
        response_model=ConsistencyProofOut,
        responses=problem_responses(401, 403, 422, 429, 503),
    )
    def get_consistency_proof(
        caller: CallerDep,
        container: ContainerDep,
        first: Annotated[int, Query(ge=0, le=2**53)],
        second: Annotated[int, Query(ge=0, le=2**53)],
    ) -> ConsistencyProofOut:
        """The proof that the tree of ``second`` extends the tree of ``first``."""
        audit = container.audit
        proof = audit.consistency_proof(first, second)
        return ConsistencyProofOut(
            first=first,
            second=second,
            first_root=_b64(audit.root(first)),
            second_root=_b64(audit.root(second)),
            proof=[_b64(h) for h in proof],
        )

    @r.get(
        "/v1/erasure-reports/{report_id}",
        name="get_erasure_report",
        response_class=Response,
        responses={
            200: {
                "description": "The signed certificate (JSON), or a rendering of it",
                "content": {"application/json": {}, "text/html": {}, "application/pdf": {}},
            },
            **problem_responses(401, 403, 404, 422, 429, 503),
        },
    )
    def get_erasure_report(
        caller: CallerDep,
        container: ContainerDep,
        report_id: Annotated[str, Path(min_length=1, max_length=64)],
        format: Annotated[ReportFormat, Query()] = ReportFormat.JSON,
    ) -> Response:
        """An erasure certificate of the caller's tenant: the signed JSON, or HTML / PDF."""
        from lethe.vault.audit.render import render_html, render_pdf
        from lethe.vault.audit.verify import verify_certificate

        report = container.reports.get(caller, report_id)
        if format is ReportFormat.JSON:
            return Response(report.document, media_type="application/json", headers=_NO_STORE)
        pem = container.audit.public_key().pem.encode("ascii")
        result = verify_certificate(report.document, pem, tenant=report.tenant_id)
        if format is ReportFormat.HTML:
            return Response(
                render_html(report.document, result), media_type="text/html; charset=utf-8", headers=_NO_STORE
            )
        headers = {
            **_NO_STORE,
            "Content-Disposition": f'attachment; filename="erasure-certificate-{report.id}.pdf"',
        }
        return Response(render_pdf(report.document, result), media_type="application/pdf", headers=headers)

    return r


def _default_router() -> APIRouter:
    from lethe.api.http.auth import authorised

    return make_router(authorised)


router = _default_router()
