"""Auditor pages: certificates (with the server's verification and how to verify offline),
the audit log's checkpoints over time and the consistency of any two, the public key.

Verification on these pages is the same code as ``lethe verify`` (``vault.audit.verify``)
run by the server with its own key: the page says what an auditor should get offline,
and the downloads give them what they need to check it themselves.

Exceptions: core errors become error pages (``api.console.app``).
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query, Request
from fastapi.responses import Response

from lethe.api.console.officer import certificate_download
from lethe.api.console.render import page
from lethe.api.console.session import User, container, viewing
from lethe.api.http.routes.audit import PEM_FILENAME
from lethe.api.report_formats import ReportFormat
from lethe.vault.audit.log import StoredCheckpoint
from lethe.vault.audit.verify import verify_certificate
from lethe.vault.merkle import verify_consistency
from lethe.vault.oversight.render_summary import summarise

router = APIRouter()
ReportId = Annotated[str, Path(min_length=1, max_length=64)]


@router.get("/certificates")
def certificates(
    request: Request, user: Annotated[User, Depends(viewing("list_erasure_requests"))]
) -> Response:
    jobs = [j for j in container(request).erasure.list(user.caller) if j.report_id]
    jobs.sort(key=lambda j: j.completed_at or j.updated_at, reverse=True)
    return page(request, user, "certificates.html", jobs=jobs, title="Erasure certificates")


@router.get("/certificates/{report_id}")
def certificate(
    request: Request, report_id: ReportId, user: Annotated[User, Depends(viewing("get_erasure_report"))]
) -> Response:
    c = container(request)
    report = c.reports.get(user.caller, report_id)
    key = c.audit.public_key()
    result = verify_certificate(report.document, key.pem.encode("ascii"), tenant=user.caller.tenant_id)
    doc: dict[str, Any] = json.loads(report.document)
    return page(
        request,
        user,
        "certificate.html",
        report=report,
        doc=doc,
        result=result,
        summary=summarise(doc, result),
        key=key,
        pem_name=PEM_FILENAME,
        title=f"Certificate {report.id[:8]}",
    )


@router.get("/certificates/{report_id}/download")
def certificate_file(
    request: Request,
    report_id: ReportId,
    user: Annotated[User, Depends(viewing("get_erasure_report"))],
    format: Annotated[ReportFormat, Query()] = ReportFormat.PDF,
) -> Response:
    return certificate_download(request, user, report_id, format)


def growth_chart(stored: list[StoredCheckpoint], width: int = 560, height: int = 140) -> dict[str, Any]:
    """A small SVG line chart of the log's size at each signed checkpoint, oldest left.

    The vertical axis runs from the smallest to the largest size shown, so growth between
    close checkpoints is visible; its two ends are labelled.
    """
    ordered = list(reversed(stored))
    chart: dict[str, Any] = {"points": "", "width": width, "height": height, "left": 60, "top": 10}
    if len(ordered) < 2:
        return chart
    lo, hi = ordered[0].tree_size, max(s.tree_size for s in ordered)
    span = max(hi - lo, 1)
    left, top, bottom = chart["left"], chart["top"], height - 20
    step = (width - left - 10) / (len(ordered) - 1)
    chart["points"] = " ".join(
        f"{left + i * step:.1f},{bottom - (s.tree_size - lo) / span * (bottom - top):.1f}"
        for i, s in enumerate(ordered)
    )
    chart.update(lo=lo, hi=hi, bottom=bottom, first=ordered[0].signed_at, last=ordered[-1].signed_at)
    return chart


@router.get("/audit")
def audit_log(
    request: Request,
    user: Annotated[User, Depends(viewing("get_audit_checkpoint"))],
    first: Annotated[int | None, Query(ge=0, le=2**53)] = None,
    second: Annotated[int | None, Query(ge=0, le=2**53)] = None,
) -> Response:
    c = container(request)
    current = c.audit.sign()
    stored = c.audit.stored(limit=30)
    consistency = None
    if first is not None and second is not None:
        from lethe.api.console.session import api_state
        from lethe.api.http.auth import permit

        permit(api_state(request), user.caller, "get_consistency_proof")
        proof = c.audit.consistency_proof(first, second)
        ok = verify_consistency(first, second, c.audit.root(first), c.audit.root(second), proof)
        consistency = {"first": first, "second": second, "ok": ok, "hashes": len(proof)}
    return page(
        request,
        user,
        "audit.html",
        current=current,
        stored=stored,
        chart=growth_chart(stored),
        key=c.audit.public_key(),
        consistency=consistency,
        title="Audit log",
    )


def duration(seconds: float | None) -> str:
    """A duration as people say it: '42 s', '3.5 min', '6.2 h', '12.0 days'."""
    if seconds is None:
        return "-"
    for unit, size in (("days", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.1f} {unit}"
    return f"{seconds:.0f} s"


@router.get("/kpis")
def kpis(request: Request, user: Annotated[User, Depends(viewing("get_audit_kpis"))]) -> Response:
    figures = container(request).kpis.for_tenant(user.caller)
    lags = [figures.deletion_lag_p50_seconds, figures.deletion_lag_p95_seconds]
    longest = max((lag for lag in lags if lag is not None), default=0) or 1
    return page(
        request,
        user,
        "kpis.html",
        k=figures,
        duration=duration,
        lag_bars=[(name, lag, (lag or 0) / longest) for name, lag in zip(("p50", "p95"), lags, strict=True)],
        title="KPIs",
    )


@router.get("/audit/public-key.pem")
def public_key_pem(
    request: Request, user: Annotated[User, Depends(viewing("get_audit_public_key_pem"))]
) -> Response:
    pem = container(request).audit.public_key().pem
    return Response(
        pem,
        media_type="application/x-pem-file",
        headers={"Content-Disposition": f'attachment; filename="{PEM_FILENAME}"'},
    )
