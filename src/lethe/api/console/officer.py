"""Privacy officer pages: erasure requests (file, list, follow, extend, pause, resume,
certificates), legal holds, subject access exports and reinstatement, retractions.

Each handler calls the core service the matching API route calls, with the signed-in
caller; its page or form names that route (``viewing`` / ``acting``), whose roles in
``ROUTE_ROLES`` decide access. Subject ids travel only in form bodies, never in URLs.

Exceptions: core errors become error pages (``api.console.app``); ``InvalidCommand``
(422) for a form field that cannot be read (a date, a number).
"""

from __future__ import annotations

from datetime import UTC, date, datetime, time
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import RedirectResponse, Response

from lethe.api.console.render import page
from lethe.api.console.session import Act, User, acting, api_state, container, viewing
from lethe.api.http.routes.deps import ResourceId
from lethe.api.http.schemas.numbers import ExtensionMonths, from_form
from lethe.api.report_formats import ReportFormat, officer_name, render_report, render_subject_export
from lethe.vault.access.one_time import OneTimeValues
from lethe.vault.access.principals import display_name
from lethe.vault.audit.step_names import Step
from lethe.vault.erasure.model import ErasureJob
from lethe.vault.erasure.preview import preview_erasure
from lethe.vault.errors import InvalidCommand

router = APIRouter()
EXTENSION_REFUSAL = "an extension is 1 or 2 months"

FINISHED = (Step.REPORTED, Step.VERIFIED)


def _required(act: Act, name: str, label: str) -> str:
    value = act.text(name)
    if value is None:
        raise InvalidCommand(f"{label} is required")
    return value


def _date(act: Act, name: str, label: str) -> datetime:
    raw = _required(act, name, label)
    try:
        return datetime.combine(date.fromisoformat(raw), time(0), tzinfo=UTC)
    except ValueError:
        raise InvalidCommand(f"{label} must be a date (YYYY-MM-DD)") from None


def _order(job: ErasureJob) -> tuple[int, float]:
    """Overdue first, then open requests by due date, then finished ones newest first."""
    if job.overdue:
        return (0, job.due_at.timestamp())
    if job.completed_at is None:
        return (1, job.due_at.timestamp())
    return (2, -job.completed_at.timestamp())


# -- erasure requests ----------------------------------------------------------------------


@router.get("/requests")
def requests_list(
    request: Request, user: Annotated[User, Depends(viewing("list_erasure_requests"))]
) -> Response:
    jobs = sorted(container(request).erasure.list(user.caller), key=_order)
    return page(request, user, "requests.html", jobs=jobs, title="Erasure requests")


@router.get("/requests/new")
def request_form(request: Request, user: Annotated[User, Depends(viewing("request_erasure"))]) -> Response:
    bases = container(request).erasure.legal_bases.choices()
    return page(request, user, "request_new.html", bases=bases, title="File an erasure request")


def _identifiers(text: str | None) -> list[str]:
    """The residue hunt's identifiers typed into the form, one a line."""
    return [line.strip() for line in (text or "").splitlines() if line.strip()]


def _code_name(job_id: str) -> str:
    return f"verification_code:{job_id}"


@router.post("/requests/preview")
def preview_request(request: Request, act: Annotated[Act, Depends(acting("request_erasure"))]) -> Response:
    """What filing would touch (nothing is filed or changed), and a form to confirm it."""
    c = container(request)
    asked = {
        "subject_id": _required(act, "subject_id", "the subject id"),
        "legal_basis": _required(act, "legal_basis", "the legal basis"),
        "reference": act.text("reference") or "",
        "identity_verification_ref": act.text("identity_verification_ref") or "",
        "identifiers": act.text("identifiers") or "",
        "residue": act.text("residue") or "review",
    }
    found = preview_erasure(c.uow, c.pseudonyms, c.keyring, act.user.caller, asked["subject_id"])
    return page(
        request,
        act.user,
        "request_preview.html",
        preview=found,
        asked=asked,
        title="Confirm the erasure request",
    )


@router.post("/requests")
def file_request(request: Request, act: Annotated[Act, Depends(acting("request_erasure"))]) -> Response:
    """File, then 303 to the request page (POST-redirect-GET: a reload files nothing). The
    verification code, which exists only in this answer, is held for the session and shown
    once by that page (``vault.access.one_time``)."""
    c = container(request)
    job = c.erasure.request(
        act.user.caller,
        _required(act, "subject_id", "the subject id"),
        _required(act, "legal_basis", "the legal basis"),
        act.text("reference"),
        act.text("identity_verification_ref"),
        identifiers=_identifiers(act.text("identifiers")),
        residue_action=act.text("residue") if act.text("identifiers") else None,
    )
    request.app.state.api.state.metrics.forget_requests.inc()
    if job.verification_code is not None:
        OneTimeValues(c.uow).hold(act.user.session_id, _code_name(job.id), job.verification_code)
    return RedirectResponse(f"/console/requests/{job.id}", status_code=303)


@router.get("/requests/{job_id}")
def request_page(
    request: Request, job_id: ResourceId, user: Annotated[User, Depends(viewing("get_erasure_request"))]
) -> Response:
    c = container(request)
    job = c.erasure.get(user.caller, job_id)
    code = OneTimeValues(c.uow).take(user.session_id, _code_name(job.id))  # shown once, then gone
    return page(
        request,
        user,
        "request.html",
        job=job,
        verification_code=code,
        finished=job.status in FINISHED,
        today=datetime.now(UTC).date().isoformat(),
        title=f"Erasure request {job.reference or job.id[:8]}",
    )


@router.get("/requests/{job_id}/certificate")
def request_certificate(
    request: Request,
    job_id: ResourceId,
    user: Annotated[User, Depends(viewing("get_erasure_report"))],
    format: Annotated[ReportFormat, Query()] = ReportFormat.PDF,
) -> Response:
    c = container(request)
    job = c.erasure.get(user.caller, job_id)
    if job.report_id is None:
        raise InvalidCommand("this request has no certificate yet")
    return certificate_download(request, user, job.report_id, format)


def certificate_download(request: Request, user: User, report_id: str, fmt: ReportFormat) -> Response:
    """The certificate as a file to save (JSON as signed, or the HTML / PDF rendering)."""
    c = container(request)
    report = c.reports.get(user.caller, report_id)
    pem = c.audit.public_key().pem.encode("ascii")
    filename = f"erasure-certificate-{report.id}.{fmt.value}"
    officer = officer_name(c.uow, report) if fmt is not ReportFormat.JSON else None
    return Response(
        render_report(report, pem, fmt, officer),
        media_type=fmt.media_type,
        headers={"Content-Disposition": f'attachment; filename="{filename}"'},
    )


@router.post("/requests/{job_id}/extend")
def extend(
    request: Request, job_id: ResourceId, act: Annotated[Act, Depends(acting("extend_erasure_request"))]
) -> Response:
    months = from_form(ExtensionMonths, _required(act, "months", "the number of months"), EXTENSION_REFUSAL)
    told = _date(act, "subject_notified_at", "the date the subject was told")
    container(request).deadlines.extend(
        act.user.caller, job_id, months, _required(act, "reason", "the reason"), told
    )
    return RedirectResponse(f"/console/requests/{job_id}", status_code=303)


@router.post("/requests/{job_id}/pause")
def pause(
    request: Request, job_id: ResourceId, act: Annotated[Act, Depends(acting("pause_erasure_request"))]
) -> Response:
    container(request).deadlines.pause(act.user.caller, job_id)
    return RedirectResponse(f"/console/requests/{job_id}", status_code=303)


@router.post("/requests/{job_id}/resume")
def resume(
    request: Request, job_id: ResourceId, act: Annotated[Act, Depends(acting("resume_erasure_request"))]
) -> Response:
    container(request).deadlines.resume(act.user.caller, job_id, act.text("identity_verification_ref"))
    return RedirectResponse(f"/console/requests/{job_id}", status_code=303)


# -- legal holds ---------------------------------------------------------------------------


@router.get("/holds")
def holds(request: Request, user: Annotated[User, Depends(viewing("list_legal_holds"))]) -> Response:
    held = container(request).erasure.holds(user.caller)
    active = [h for h in held if h.lifted_at is None]
    lifted = [h for h in held if h.lifted_at is not None]
    return page(request, user, "holds.html", active=active, lifted=lifted, title="Legal holds")


@router.post("/holds")
def place_hold(request: Request, act: Annotated[Act, Depends(acting("place_legal_hold"))]) -> Response:
    container(request).erasure.place_hold(
        act.user.caller,
        _required(act, "subject_id", "the subject id"),
        _required(act, "reason", "the reason"),
        act.text("reference"),
    )
    return RedirectResponse("/console/holds", status_code=303)


@router.post("/holds/{hold_id}/lift")
def lift_hold(
    request: Request, hold_id: ResourceId, act: Annotated[Act, Depends(acting("lift_legal_hold"))]
) -> Response:
    container(request).erasure.lift_hold(act.user.caller, hold_id)
    return RedirectResponse("/console/holds", status_code=303)


# -- subjects: access exports and reinstatement ------------------------------------------------


@router.get("/subjects")
def subjects(request: Request, user: Annotated[User, Depends(viewing("request_subject_access"))]) -> Response:
    return page(request, user, "subjects.html", title="Subjects", reinstated=None)


@router.post("/subjects/export")
def export(request: Request, act: Annotated[Act, Depends(acting("request_subject_access"))]) -> Response:
    try:
        fmt = ReportFormat(act.text("format") or "pdf")
    except ValueError:
        raise InvalidCommand("the format is json, html or pdf") from None
    c = container(request)
    subject_id = _required(act, "subject_id", "the subject id")
    api_state(request).subject_sweeps.charge(act.user.caller, subject_id)  # as the API's export
    exported = c.subject_access.export(act.user.caller, subject_id, fmt.value)
    pem = c.audit.public_key().pem.encode("ascii")
    officer = act.user.caller
    who = None if fmt is ReportFormat.JSON else display_name(c.uow, officer.tenant_id, officer.principal)
    content = render_subject_export(exported.document, exported.tenant_id, pem, fmt, who)
    name = f"subject-export-{exported.id}.{fmt.value}"
    return Response(
        content, media_type=fmt.media_type, headers={"Content-Disposition": f'attachment; filename="{name}"'}
    )


@router.post("/subjects/reinstate")
def reinstate(request: Request, act: Annotated[Act, Depends(acting("reinstate_subject"))]) -> Response:
    done = container(request).erasure.reinstate(
        act.user.caller,
        _required(act, "subject_id", "the subject id"),
        _required(act, "reason", "the reason"),
    )
    return page(request, act.user, "subjects.html", title="Subjects", reinstated=done)


# -- retractions (privacy officers and reviewers) ------------------------------------------------


@router.get("/retractions")
def retractions(request: Request, user: Annotated[User, Depends(viewing("retract_memories"))]) -> Response:
    return page(request, user, "retractions.html", title="Retractions", result=None, asked=None)


@router.post("/retractions")
def retract(request: Request, act: Annotated[Act, Depends(acting("retract_memories"))]) -> Response:
    by = act.text("by") or "memory_id"
    target = _required(act, "target", "the memory id or source")
    reason = _required(act, "reason", "the reason")
    dry_run = act.text("dry_run") == "yes"
    asked = {"by": by, "target": target, "reason": reason, "dry_run": dry_run}
    if by not in ("memory_id", "source_ref"):
        raise InvalidCommand("retract by memory id or by source")
    result = container(request).retractions.retract(
        act.user.caller,
        memory_id=target if by == "memory_id" else None,
        source_ref=target if by == "source_ref" else None,
        reason=reason,
        dry_run=dry_run,
    )
    return page(request, act.user, "retractions.html", title="Retractions", result=result, asked=asked)
