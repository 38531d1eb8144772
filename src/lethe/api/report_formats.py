"""Certificates and subject access exports in the formats their readers want, for both edges.

JSON is the stored document byte for byte, as signed (never re-serialised, or the
signature would no longer cover it). HTML and PDF are for people: rendered together
with the result of the offline verification, so a reader sees whether it passed.

Exceptions: none of its own; rendering errors of ``vault.oversight.render`` propagate.
"""

from __future__ import annotations

from enum import StrEnum

from lethe.vault.access.principals import display_name
from lethe.vault.audit.verify import verify_certificate
from lethe.vault.audit.verify_export import verify_export
from lethe.vault.oversight.certificate import ErasureReport
from lethe.vault.store.db import UnitOfWork


class ReportFormat(StrEnum):
    JSON = "json"
    HTML = "html"
    PDF = "pdf"

    @property
    def media_type(self) -> str:
        return _MEDIA_TYPES[self]


_MEDIA_TYPES = {
    ReportFormat.JSON: "application/json",
    ReportFormat.HTML: "text/html; charset=utf-8",
    ReportFormat.PDF: "application/pdf",
}


def render_report(
    report: ErasureReport, public_key_pem: bytes, fmt: ReportFormat, requested_by_name: str | None = None
) -> bytes:
    """The certificate as ``fmt``: the signed bytes for JSON, else a verified rendering
    (naming the officer who filed the request, when the caller knows their name)."""
    if fmt is ReportFormat.JSON:
        return report.document
    from lethe.vault.oversight.render import render_html, render_pdf  # fpdf2 takes ~0.5 s to import

    result = verify_certificate(report.document, public_key_pem, tenant=report.tenant_id)
    if fmt is ReportFormat.HTML:
        return render_html(report.document, result, requested_by_name).encode("utf-8")
    return render_pdf(report.document, result, requested_by_name)


def officer_name(uow: UnitOfWork, report: ErasureReport) -> str | None:
    """The display name of the token that filed the certified request, if it has one."""
    requested_by = (report.parsed().get("request") or {}).get("requested_by")
    if not isinstance(requested_by, str):
        return None
    return display_name(uow, report.tenant_id, requested_by)


def render_subject_export(
    document: bytes,
    tenant_id: str,
    public_key_pem: bytes,
    fmt: ReportFormat,
    requested_by_name: str | None = None,
) -> bytes:
    """A subject access export as ``fmt``: the signed bytes for JSON, else a verified rendering
    (carrying those bytes, and naming the officer who asked when the caller knows their name)."""
    if fmt is ReportFormat.JSON:
        return document
    from lethe.vault.oversight.render_export import render_export_html, render_export_pdf

    result = verify_export(document, public_key_pem, tenant=tenant_id)
    if fmt is ReportFormat.HTML:
        return render_export_html(document, result, requested_by_name).encode("utf-8")
    return render_export_pdf(document, result, requested_by_name)
