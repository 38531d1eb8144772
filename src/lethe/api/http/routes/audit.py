"""Auditor endpoints: signed checkpoints, the public key, Merkle proofs, erasure reports, the KPIs.

The audit tree spans every tenant; its endpoints reveal hashes and sizes only. Reports
are tenant-scoped: another tenant's report is a 404, indistinguishable from none.
The JSON report is served byte for byte as stored and signed (never re-serialised).

Exceptions: core errors reach the problem handlers: ``InvalidCommand`` (422, a size
or index that does not exist), ``LogInconsistent`` (409, the log refused to sign),
``NotFound`` (404), ``OutOfScope`` (403), ``StoreUnavailable`` (503).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Response

from lethe.api.http.auth import CallerDep
from lethe.api.http.problems import problem_responses
from lethe.api.http.routes.deps import ContainerDep
from lethe.api.http.schemas.audit import (
    AuditForkList,
    AuditForkOut,
    ConsistencyProofOut,
    InclusionProofOut,
    KpisOut,
    PublicKeyOut,
)
from lethe.api.report_formats import ReportFormat, officer_name, render_report

router = APIRouter(tags=["audit"])

_NO_STORE = {"Cache-Control": "no-store"}
PEM_FILENAME = "lethe-public.pem"  # the name the docs' ``lethe verify`` examples use
LogPosition = Annotated[int, Query(ge=0, le=2**53)]  # a leaf index or a tree size


@router.get(
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
    return Response(container.audit.checkpoint(), media_type="text/plain; charset=utf-8")


@router.get(
    "/v1/audit/kpis",
    name="get_audit_kpis",
    response_model=KpisOut,
    responses=problem_responses(401, 403, 429, 503),
)
def get_audit_kpis(caller: CallerDep, container: ContainerDep) -> KpisOut:
    """The tenant's KPIs: attribution, age, expiry on time, deletion lag, retractions, requests."""
    return KpisOut.from_domain(container.kpis.for_tenant(caller))


@router.get(
    "/v1/audit/public-key",
    name="get_audit_public_key",
    response_model=PublicKeyOut,
    responses=problem_responses(401, 403, 429, 503),
)
def get_audit_public_key(caller: CallerDep, container: ContainerDep) -> PublicKeyOut:
    """The key checkpoints and certificates are signed with (pin it out of band too)."""
    return PublicKeyOut.from_domain(container.audit.public_key())


@router.get(
    "/v1/audit/public-key.pem",
    name="get_audit_public_key_pem",
    response_class=Response,
    responses={
        200: {"description": "The key as a PEM file", "content": {"application/x-pem-file": {}}},
        **problem_responses(401, 403, 429, 503),
    },
)
def get_audit_public_key_pem(caller: CallerDep, container: ContainerDep) -> Response:
    """The same key as a PEM file, ready for ``lethe verify --public-key lethe-public.pem``."""
    return Response(
        container.audit.public_key().pem,
        media_type="application/x-pem-file",
        headers={"Content-Disposition": f'attachment; filename="{PEM_FILENAME}"'},
    )


@router.get(
    "/v1/audit/proofs/inclusion",
    name="get_inclusion_proof",
    response_model=InclusionProofOut,
    responses=problem_responses(401, 403, 422, 429, 503),
)
def get_inclusion_proof(
    caller: CallerDep,
    container: ContainerDep,
    index: LogPosition,
    tree_size: Annotated[int, Query(ge=1, le=2**53)],
) -> InclusionProofOut:
    """The inclusion proof of leaf ``index`` (event ``seq = index + 1``) in the tree of ``tree_size``."""
    audit = container.audit
    proof = audit.inclusion_proof(index, tree_size)
    leaf, root = audit.leaf_hash(index), audit.root(tree_size)
    return InclusionProofOut.from_hashes(index, tree_size, leaf, root, proof)


@router.get(
    "/v1/audit/proofs/consistency",
    name="get_consistency_proof",
    response_model=ConsistencyProofOut,
    responses=problem_responses(401, 403, 422, 429, 503),
)
def get_consistency_proof(
    caller: CallerDep, container: ContainerDep, first: LogPosition, second: LogPosition
) -> ConsistencyProofOut:
    """The proof that the tree of ``second`` extends the tree of ``first``."""
    audit = container.audit
    proof = audit.consistency_proof(first, second)
    return ConsistencyProofOut.from_hashes(first, second, audit.root(first), audit.root(second), proof)


@router.get(
    "/v1/audit/forks",
    name="list_audit_forks",
    response_model=AuditForkList,
    responses=problem_responses(401, 403, 429, 503),
)
def list_audit_forks(caller: CallerDep, container: ContainerDep) -> AuditForkList:
    """Where restoring an older backup forked the log: the shared prefix, the abandoned branch's
    size and signed checkpoints, and the erasures of the caller's tenant re-applied."""
    return AuditForkList(items=[AuditForkOut.from_domain(f) for f in container.forks.list(caller)])


@router.get(
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
    report = container.reports.get(caller, report_id)
    pem = container.audit.public_key().pem.encode("ascii")
    headers = dict(_NO_STORE)
    if format is ReportFormat.PDF:
        headers["Content-Disposition"] = f'attachment; filename="erasure-certificate-{report.id}.pdf"'
    name = officer_name(container.uow, report) if format is not ReportFormat.JSON else None
    return Response(render_report(report, pem, format, name), media_type=format.media_type, headers=headers)
