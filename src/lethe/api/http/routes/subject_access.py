"""Subject access requests: what Lethe holds about a subject, as a signed export or for people.

The JSON export is served byte for byte as signed (never re-serialised); HTML and PDF are
renderings with the issuer's verification result. The subject id travels in the body.

Exceptions: core errors reach the problem handlers: ``SubjectForgotten`` (409, the
erasure fence is up), ``OutOfScope`` (403), ``InvalidCommand`` (422), ``StoreUnavailable`` (503).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request, Response

from lethe.api.http.auth import CallerDep
from lethe.api.http.problems import problem_responses
from lethe.api.http.routes.deps import ContainerDep
from lethe.api.http.schemas.subject_access import SubjectAccessIn
from lethe.api.report_formats import ReportFormat, render_subject_export
from lethe.vault.access.principals import display_name

router = APIRouter(tags=["subject access"])


@router.post(
    "/v1/subject-access-requests",
    name="request_subject_access",
    response_class=Response,
    responses={
        200: {
            "description": "The signed export `{manifest, items, signature}` (JSON), or a rendering of it",
            "content": {"application/json": {}, "text/html": {}, "application/pdf": {}},
        },
        **problem_responses(401, 403, 409, 413, 422, 429, 503),
    },
)
def request_subject_access(
    request: Request,
    body: SubjectAccessIn,
    caller: CallerDep,
    container: ContainerDep,
    format: Annotated[ReportFormat, Query()] = ReportFormat.JSON,
) -> Response:
    """Everything held about the subject in the caller's tenant, signed; each request is audited."""
    request.app.state.subject_sweeps.charge(caller, body.subject_id)  # an export refused by the fence
    export = container.subject_access.export(caller, body.subject_id, format.value)
    pem = container.audit.public_key().pem.encode("ascii")
    headers = {"Cache-Control": "no-store"}
    if format is ReportFormat.PDF:
        headers["Content-Disposition"] = f'attachment; filename="subject-export-{export.id}.pdf"'
    name = None
    if format is not ReportFormat.JSON:  # the officer's display name, for people to read
        name = display_name(container.uow, caller.tenant_id, caller.principal)
    content = render_subject_export(export.document, export.tenant_id, pem, format, name)
    return Response(content, media_type=format.media_type, headers=headers)
