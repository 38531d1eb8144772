"""Certificates of format v3 say what was done, no more: erased, nothing_held or partial.

Real erasures over real SQLite and PostgreSQL: a subject Lethe never saw is certified
``nothing_held`` and no sentence of the HTML or PDF (page one and appendix, as pypdf
extracts it) says a key was destroyed; a normal forget is ``erased``; a certificate
re-signed with the issuer's key whose stated class contradicts its evidence fails the
verifier's ``result`` check, and only that check.
"""

from __future__ import annotations

import io
import json
import re
from typing import Any

from pypdf import PdfReader

from lethe.api.bootstrap import Container
from lethe.api.report_formats import ReportFormat, render_report
from lethe.vault.audit.verify import verify_certificate
from lethe.vault.oversight.certificate import ErasureReport, sign_certificate
from tests.conftest import agent, officer, write_cmd

# what a sentence claiming a destroyed key looks like, in any of the renderings
DESTROYED_CLAIMS = re.compile(
    r"key was destroyed in|keys? destroyed:|encryption key destroyed|under the destroyed key|"
    r"destroyed by this request|deleted from the keystore|\d+ key\(s\) destroyed|Result: Erased",
    re.IGNORECASE,
)


def forget(c: Container, subject: str) -> tuple[ErasureReport, bytes, str]:
    filed = c.erasure.request(officer(), subject, "gdpr-art17-1a", "DSR-9")
    c.erasure.run_pending()
    job = c.erasure.get(officer(), filed.id)
    assert job.report_id is not None, job.last_error
    return c.reports.load(job.report_id), c.audit.public_key().pem.encode(), filed.verification_code


def pdf_text(data: bytes) -> str:
    return " ".join(" ".join(p.extract_text().split()) for p in PdfReader(io.BytesIO(data)).pages)


def resigned(c: Container, document: bytes, **changes: Any) -> bytes:
    return sign_certificate({**json.loads(document), **changes}, c.reports.signer, c.audit.origin)


def test_a_never_seen_subject_is_certified_nothing_held_and_no_sentence_claims_a_destroyed_key(
    lethe: Container,
) -> None:
    report, pem, code = forget(lethe, "customer-9")
    doc = report.parsed()
    assert (doc["format"], doc["result"], doc["missing"]) == (
        "lethe-erasure-certificate/v3",
        "nothing_held",
        [],
    )
    checked = verify_certificate(report.document, pem, subject_id="customer-9", verification_code=code)
    assert checked.ok, checked.summary()
    assert next(c for c in checked.checks if c.name == "result").detail == "nothing_held"

    html = render_report(report, pem, ReportFormat.HTML).decode()
    pdf = pdf_text(render_report(report, pem, ReportFormat.PDF))
    for text in (html, pdf):
        assert "Result: Nothing held" in text
        assert "held nothing about them" in text and "the request is recorded and certified as such" in text
        assert "no key was destroyed" in text
        claims = DESTROYED_CLAIMS.findall(text)
        assert not claims, claims


def test_a_normal_forget_is_certified_erased_and_says_the_key_was_destroyed(lethe: Container) -> None:
    lethe.memories.write(agent(), write_cmd("alice likes tea"))
    report, pem, _ = forget(lethe, "alice@example.com")
    doc = report.parsed()
    assert (doc["result"], doc["missing"]) == ("erased", [])
    assert verify_certificate(report.document, pem).ok
    pdf = pdf_text(render_report(report, pem, ReportFormat.PDF))
    assert "Result: Erased" in pdf and "that key was destroyed in Lethe's local key store" in pdf
    assert "Encryption keys destroyed: 1" in pdf


def test_a_stated_result_that_contradicts_the_evidence_fails_the_result_check(lethe: Container) -> None:
    lethe.memories.write(agent(), write_cmd("alice likes tea"))
    erased, pem, _ = forget(lethe, "alice@example.com")
    nothing, _, _ = forget(lethe, "customer-9")
    why = [{"part": "key_material", "generation": 1, "why": "made up"}]
    for document, changes in (
        (erased.document, {"result": "nothing_held"}),
        (erased.document, {"result": "partial", "missing": why}),
        (erased.document, {"missing": why}),
        (nothing.document, {"result": "erased"}),
        (
            nothing.document,
            {"result": "partial", "missing": [{"part": "key", "generation": None, "why": "x"}]},
        ),
    ):
        forged = resigned(lethe, document, **changes)
        assert verify_certificate(forged, pem).failed == ["result"], changes
    unknown = verify_certificate(resigned(lethe, erased.document, result="forgotten"), pem)
    assert unknown.failed == ["format", "result"]
