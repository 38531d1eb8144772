"""Privacy-officer and auditor endpoints: erasure requests, their deadlines, legal holds, reinstatement.

Subject ids travel only in request bodies, never in URLs (URLs reach access logs).

Exceptions: core errors (``LegalHoldActive`` 409, ``NotFound`` 404, ...) reach the
problem handlers.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response
from fastapi.responses import JSONResponse

from lethe.api.http.auth import CallerDep
from lethe.api.http.problems import problem_responses
from lethe.api.http.routes.deps import ContainerDep, IdempotencyHeader, MetricsDep, ResourceId
from lethe.api.http.schemas.common import one_idempotency_key
from lethe.api.http.schemas.erasure import (
    ErasureAccepted,
    ErasureJobList,
    ErasureJobOut,
    ErasurePreviewOut,
    ErasureRequestIn,
    ExtensionIn,
    LegalHoldIn,
    LegalHoldList,
    LegalHoldOut,
    ReinstatementIn,
    ReinstatementOut,
    ResumeIn,
)
from lethe.vault.erasure.preview import preview_erasure

router = APIRouter(tags=["erasure"])


@router.post(
    "/v1/erasure-requests",
    name="request_erasure",
    status_code=202,
    response_model=ErasureAccepted,
    responses={
        200: {
            "model": ErasurePreviewOut | ErasureAccepted,
            "description": "dry_run: what a forget would touch (ErasurePreview); a retried "
            "idempotency key: the first filing (ErasureAccepted)",
        },
        **problem_responses(401, 403, 409, 413, 422, 429, 503),
    },
)
def request_erasure(
    body: ErasureRequestIn,
    caller: CallerDep,
    container: ContainerDep,
    metrics: MetricsDep,
    response: Response,
    idempotency_key: IdempotencyHeader = None,
) -> ErasureAccepted | JSONResponse:
    """File a right-to-forget request; the job runs in the background (due one calendar month later).

    With ``dry_run`` nothing is filed: the 200 answer previews what the forget would touch.
    With an ``Idempotency-Key`` (or ``idempotency_key``), a retry within 24 hours returns the
    first filing's request and verification code (200) and files nothing.
    """
    if body.dry_run:
        found = preview_erasure(
            container.uow, container.pseudonyms, container.keyring, caller, body.subject_id
        )
        return JSONResponse(ErasurePreviewOut.from_domain(found).model_dump(mode="json"))
    key = one_idempotency_key(body.idempotency_key, idempotency_key)
    job = container.erasure.request(
        caller,
        body.subject_id,
        body.legal_basis,
        body.reference,
        body.identity_verification_ref,
        key,
        identifiers=body.identifiers,
        residue_action=body.residue,
    )
    if job.replayed:
        response.status_code = 200
    else:
        metrics.forget_requests.inc()
    return ErasureAccepted.from_domain(job)


@router.get(
    "/v1/erasure-requests",
    name="list_erasure_requests",
    response_model=ErasureJobList,
    responses=problem_responses(401, 403, 422, 429, 503),
)
def list_erasure_requests(
    caller: CallerDep,
    container: ContainerDep,
    status: Annotated[str | None, Query(max_length=32, pattern=r"^[a-z_]+$")] = None,
    overdue: bool = False,
) -> ErasureJobList:
    """The tenant's erasure jobs, optionally by status or only those past their due date."""
    jobs = container.erasure.list(caller, status=status, overdue=overdue)
    return ErasureJobList.from_domain(jobs)


@router.get(
    "/v1/erasure-requests/{job_id}",
    name="get_erasure_request",
    response_model=ErasureJobOut,
    responses=problem_responses(401, 403, 404, 422, 429, 503),
)
def get_erasure_request(job_id: ResourceId, caller: CallerDep, container: ContainerDep) -> ErasureJobOut:
    """One job with its steps, evidence and report id."""
    return ErasureJobOut.from_domain(container.erasure.get(caller, job_id))


@router.post(
    "/v1/erasure-requests/{job_id}/extensions",
    name="extend_erasure_request",
    response_model=ErasureJobOut,
    responses=problem_responses(401, 403, 404, 409, 413, 422, 429, 503),
)
def extend_erasure_request(
    job_id: ResourceId, body: ExtensionIn, caller: CallerDep, container: ContainerDep
) -> ErasureJobOut:
    """Extend the deadline (Art. 12(3)): 1-2 further months in total, the subject told within the first."""
    job = container.deadlines.extend(caller, job_id, body.months, body.reason, body.subject_notified_at)
    return ErasureJobOut.from_domain(job)


@router.post(
    "/v1/erasure-requests/{job_id}/pause",
    name="pause_erasure_request",
    response_model=ErasureJobOut,
    responses=problem_responses(401, 403, 404, 409, 422, 429, 503),
)
def pause_erasure_request(job_id: ResourceId, caller: CallerDep, container: ContainerDep) -> ErasureJobOut:
    """Stop the clock while the requester's identity is verified; nothing is erased meanwhile."""
    return ErasureJobOut.from_domain(container.deadlines.pause(caller, job_id))


@router.post(
    "/v1/erasure-requests/{job_id}/resume",
    name="resume_erasure_request",
    response_model=ErasureJobOut,
    responses=problem_responses(401, 403, 404, 409, 413, 422, 429, 503),
)
def resume_erasure_request(
    job_id: ResourceId, caller: CallerDep, container: ContainerDep, body: ResumeIn | None = None
) -> ErasureJobOut:
    """Restart the clock: the due date moves by the time it stood still, and the erasure runs."""
    ref = body.identity_verification_ref if body is not None else None
    return ErasureJobOut.from_domain(container.deadlines.resume(caller, job_id, ref))


@router.get(
    "/v1/legal-holds",
    name="list_legal_holds",
    response_model=LegalHoldList,
    responses=problem_responses(401, 403, 422, 429, 503),
)
def list_legal_holds(caller: CallerDep, container: ContainerDep, active: bool | None = None) -> LegalHoldList:
    """The tenant's legal holds: all, only those in force (``active=true``) or only lifted ones."""
    return LegalHoldList.from_domain(container.erasure.holds(caller, active))


@router.post(
    "/v1/legal-holds",
    name="place_legal_hold",
    status_code=201,
    response_model=LegalHoldOut,
    responses=problem_responses(401, 403, 409, 413, 422, 429, 503),
)
def place_legal_hold(body: LegalHoldIn, caller: CallerDep, container: ContainerDep) -> LegalHoldOut:
    """Block erasure of a subject until the hold is lifted."""
    return LegalHoldOut.from_domain(
        container.erasure.place_hold(caller, body.subject_id, body.reason, body.reference)
    )


@router.delete(
    "/v1/legal-holds/{hold_id}",
    name="lift_legal_hold",
    status_code=204,
    response_class=Response,
    responses=problem_responses(401, 403, 404, 409, 422, 429, 503),
)
def lift_legal_hold(hold_id: ResourceId, caller: CallerDep, container: ContainerDep) -> Response:
    container.erasure.lift_hold(caller, hold_id)
    return Response(status_code=204)


@router.post(
    "/v1/subject-reinstatements",
    name="reinstate_subject",
    status_code=201,
    response_model=ReinstatementOut,
    responses=problem_responses(401, 403, 404, 409, 413, 422, 429, 503),
)
def reinstate_subject(body: ReinstatementIn, caller: CallerDep, container: ContainerDep) -> ReinstatementOut:
    """Lift the erasure fence of a forgotten subject: writes resume under a new key generation."""
    return ReinstatementOut.from_domain(container.erasure.reinstate(caller, body.subject_id, body.reason))
