"""Page one of a certificate speaks plainly, in HTML and PDF; the JSON follows as an appendix.

Real certificates from a real erasure (SQLite and PostgreSQL), rendered as the server
renders them; the outcome rules are checked on edited documents.
"""

from __future__ import annotations

import io
import json
from dataclasses import replace
from typing import Any

from pypdf import PdfReader

from lethe.api.bootstrap import Container
from lethe.api.report_formats import ReportFormat, officer_name, render_report
from lethe.vault.audit.verify import Check, VerificationResult
from lethe.vault.canonical import canonical_json
from lethe.vault.model import Role
from lethe.vault.oversight.certificate import ErasureReport
from lethe.vault.oversight.render_summary import (
    ERASED,
    NOT_ERASED,
    NOT_VERIFIED,
    WITH_EXCEPTIONS,
    outcome,
)
from tests.conftest import agent, write_cmd

PASSED = VerificationResult((Check("signature", True, "ok"),))


def certified(lethe: Container) -> tuple[ErasureReport, bytes]:
    token, _ = lethe.tokens.create(Role.PRIVACY_OFFICER, "t1", display_name="Dana Officer")
    officer = lethe.tokens.authenticate(token)
    for i in range(3):
        lethe.memories.write(agent(), write_cmd(f"alice likes tea {i}"))
    job = lethe.erasure.request(officer, "alice@example.com", "gdpr-art17-1b", "DSR-2026-014")
    lethe.erasure.run_pending()
    report = lethe.reports.get(officer, lethe.erasure.get(officer, job.id).report_id)
    return report, lethe.audit.public_key().pem.encode("ascii")


def pdf_pages(data: bytes) -> list[str]:
    return [" ".join(page.extract_text().split()) for page in PdfReader(io.BytesIO(data)).pages]


def test_pdf_page_one_is_a_plain_summary_and_the_json_is_an_appendix(lethe: Container) -> None:
    report, pem = certified(lethe)
    name = officer_name(lethe.uow, report)
    assert name == "Dana Officer"
    pages = pdf_pages(render_report(report, pem, ReportFormat.PDF, name))
    first = pages[0]
    for needed in (
        "Result: Erased",
        "Filed by Dana Officer",
        "DSR-2026-014",
        "GDPR Art. 17(1)(b): consent withdrawn",
        "Memories: 3",
        "Encryption keys destroyed: 1",
        "NIST SP 800-88",
        "Lethe's local key store",
        "Request received",
        "The subject's encryption key destroyed",
        "What remains, and why",
        "Accountability (GDPR Art. 5(2))",
        "No recorded backup predates the erasure",
        f"lethe verify erasure-certificate-{report.id}.json --public-key lethe-public.pem",
    ):
        assert needed in first, needed
    assert "Appendix" not in first and pages[1].startswith("Appendix: the certificate in full")
    appendix = " ".join(pages[1:])
    assert '"memories_forgotten": 3' in appendix and "VERIFIED: all" in appendix


def test_html_opens_with_the_same_summary_before_the_appendix(lethe: Container) -> None:
    report, pem = certified(lethe)
    page = render_report(report, pem, ReportFormat.HTML, officer_name(lethe.uow, report)).decode()
    summary, appendix = page.split('id="appendix"')
    assert 'id="outcome">Result: Erased<' in summary and "Dana Officer" in summary
    assert "NIST SP 800-88" in summary and "lethe verify erasure-certificate-" in summary
    assert "Report id:" in appendix and "memories_forgotten" in appendix
    assert "http://" not in page and "https://" not in page


def test_a_tampered_certificate_says_not_verified_on_page_one(lethe: Container) -> None:
    report, pem = certified(lethe)
    doc = json.loads(report.document)
    doc["request"]["legal_basis"] = "gdpr-art17-1a"
    tampered = replace(report, document=canonical_json(doc))
    first = pdf_pages(render_report(tampered, pem, ReportFormat.PDF))[0]
    assert "Result: Not verified" in first and "signature" in first


def edited(report: ErasureReport, change: Any) -> dict[str, Any]:
    doc = json.loads(report.document)
    change(doc)
    return doc


def step(doc: dict[str, Any], name: str) -> dict[str, Any]:
    return next(s for s in doc["steps"] if s["name"] == name)


def test_the_outcome_names_every_exception(lethe: Container) -> None:
    report, _ = certified(lethe)
    assert outcome(json.loads(report.document), PASSED) == (ERASED, [])

    def waiting_kms(d: dict[str, Any]) -> None:
        step(d, "key_destroyed")["evidence"]["receipts"][0]["material_destroyed"] = False

    verdict, why = outcome(edited(report, waiting_kms), PASSED)
    assert verdict == WITH_EXCEPTIONS and "waiting period" in why[0]

    def no_compaction(d: dict[str, Any]) -> None:
        d["steps"] = [s for s in d["steps"] if s["name"] != "compacted"]

    verdict, why = outcome(edited(report, no_compaction), PASSED)
    assert verdict == WITH_EXCEPTIONS and "not yet removed" in why[0]

    def slices_left(d: dict[str, Any]) -> None:
        step(d, "compacted")["evidence"]["scan"]["slices_found"] = 2

    assert outcome(edited(report, slices_left), PASSED)[0] == WITH_EXCEPTIONS

    def no_key_destruction(d: dict[str, Any]) -> None:
        d["steps"] = [s for s in d["steps"] if s["name"] != "key_destroyed"]

    assert outcome(edited(report, no_key_destruction), PASSED)[0] == NOT_ERASED

    def still_readable(d: dict[str, Any]) -> None:
        step(d, "verified")["evidence"]["retrievable_memories"] = 1

    assert outcome(edited(report, still_readable), PASSED)[0] == NOT_ERASED
    failed = VerificationResult((Check("signature", False, "bad signature"),))
    assert outcome(json.loads(report.document), failed) == (
        NOT_VERIFIED,
        ["the check 'signature' failed: bad signature"],
    )


def test_a_key_still_in_its_waiting_period_is_not_called_purged_on_page_one(lethe: Container) -> None:
    from lethe.vault.oversight.render_summary import summarise

    report, _ = certified(lethe)
    doc = report.parsed()
    assert "destroyed in" in summarise(doc, PASSED).method  # the local KMS destroys at once
    doc["key_destruction"] = {
        **doc["key_destruction"],
        "mode": "scheduled",
        "window_closed": False,
        "irrecoverable_after": "2027-01-15T00:00:00Z",
    }
    method = summarise(doc, PASSED).method
    assert "made unusable" in method and "2027-01-15 00:00 UTC" in method and "final certificate" in method
