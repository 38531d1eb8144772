"""The verifier that needs no install (/verify, one HTML file) agrees with ``lethe verify``.

It runs in real headless Chromium, opened from disk (file://, offline) for the tamper
matrix (tests/tamper_matrix.py): for the genuine certificate and every tampered copy,
the browser fails exactly the checks ``vault.audit.verify`` fails, and for v3's result
classes (nothing_held, partial) a stated class the evidence contradicts fails ``result``
in both. Then a person uses the
served page: picks the files, reads VERIFIED, and for a tampered copy which check failed.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from lethe.api.bootstrap import build
from lethe.api.settings import Settings
from lethe.keys.signing import Ed25519Signer
from lethe.vault.audit.verify import verify_certificate
from lethe.vault.oversight.certificate import sign_certificate
from tests.browser.conftest import Console, Visit
from tests.conftest import agent, officer, write_cmd
from tests.scheduling_kms import SchedulingKms
from tests.tamper_matrix import TAMPERS

pytestmark = pytest.mark.browser
PAGE = Path(__file__).resolve().parents[2] / "src" / "lethe" / "api" / "http" / "verify.html"
SUBJECT = "alice@example.com"


@dataclass
class Certified:
    document: bytes
    pem: bytes
    code: str
    signer: Ed25519Signer
    origin: str


@pytest.fixture(scope="module")
def certified(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Certified]:
    c = build(Settings(data_dir=tmp_path_factory.mktemp("verifier") / "data"), create=True)
    try:
        for i in range(3):
            c.memories.write(agent(), write_cmd(f"alice likes tea {i}"))
        filed = c.erasure.request(officer(), SUBJECT, "gdpr-art17-1a", "DSR-1")
        c.erasure.run_pending()
        report = c.reports.load(c.erasure.get(officer(), filed.id).report_id)
        yield Certified(
            report.document,
            c.audit.public_key().pem.encode(),
            filed.verification_code,
            c.reports.signer,
            c.audit.origin,
        )
    finally:
        c.close()


def in_browser(page: Any, document: bytes, pem: bytes, **opts: str) -> dict[str, Any]:
    return page.evaluate(
        """async ([b64, pem, opts]) => {
             const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
             return await window.letheVerify(bytes, pem, opts);
           }""",
        [base64.b64encode(document).decode(), pem.decode(), opts],
    )


def failed(checks: Any) -> list[str]:
    return sorted(
        c["name"] if isinstance(c, dict) else c.name
        for c in checks
        if not (c["ok"] if isinstance(c, dict) else c.ok)
    )


@pytest.fixture
def offline(visit: Visit) -> Visit:
    visit.page.goto(PAGE.as_uri())
    visit.base = "file://"  # the page is the file itself: it may request nothing else
    return visit


def test_the_genuine_certificate_passes_the_same_checks_in_the_browser(
    offline: Visit, certified: Certified
) -> None:
    browser = in_browser(
        offline.page, certified.document, certified.pem, subjectId=SUBJECT, code=certified.code, tenant="t1"
    )
    python = verify_certificate(
        certified.document, certified.pem, subject_id=SUBJECT, tenant="t1", verification_code=certified.code
    )
    assert python.ok and browser["ok"], browser["summary"]
    assert [c["name"] for c in browser["checks"]] == [c.name for c in python.checks]
    assert browser["summary"] == python.summary()


@pytest.mark.parametrize("tamper", TAMPERS, ids=[t.name for t in TAMPERS])
def test_the_browser_fails_exactly_the_checks_lethe_verify_fails(
    offline: Visit, certified: Certified, tamper: Any
) -> None:
    document = tamper.apply(certified.document, certified.signer, certified.origin)
    python = verify_certificate(document, certified.pem)
    assert not python.ok, "the tamper must be caught"
    browser = in_browser(offline.page, document, certified.pem)
    assert not browser["ok"]
    assert failed(browser["checks"]) == failed(python.checks), browser["summary"]


def test_subject_checks_agree_for_the_right_and_wrong_subject_and_code(
    offline: Visit, certified: Certified
) -> None:
    other_key = Ed25519Signer.generate().public_key_pem()
    cases = [
        ({"subject_id": SUBJECT, "verification_code": certified.code}, certified.pem),
        ({"subject_id": "mallory@example.com", "verification_code": certified.code}, certified.pem),
        # the id as Lethe folds it: an invisible character confirms, a visible one does not
        ({"subject_id": "alice\u200b@example\u00ad.com", "verification_code": certified.code}, certified.pem),
        ({"subject_id": "alice\u00a0@example.com", "verification_code": certified.code}, certified.pem),
        ({"subject_id": SUBJECT}, certified.pem),
        ({"subject_id": SUBJECT, "verification_code": "0" * 25}, certified.pem),
        ({"tenant": "t2"}, certified.pem),
        ({}, other_key),
    ]
    for opts, pem in cases:
        python = verify_certificate(certified.document, pem, **opts)
        js = {"subject_id": "subjectId", "verification_code": "code", "tenant": "tenant"}
        browser = in_browser(offline.page, certified.document, pem, **{js[k]: v for k, v in opts.items()})
        assert failed(browser["checks"]) == failed(python.checks), (opts, browser["summary"])
        if "\u200b" in opts.get("subject_id", ""):
            assert python.ok  # a positive control for the folding


def test_a_person_verifies_with_the_served_page_and_sees_which_check_fails(
    visit: Visit, console: Console, certified: Certified, tmp_path: Path
) -> None:
    cert, key = tmp_path / "certificate.json", tmp_path / "lethe-public.pem"
    cert.write_bytes(certified.document)
    key.write_bytes(certified.pem)
    page = visit.page
    visit.go("/verify")
    page.get_by_label("Certificate (JSON)").set_input_files(str(cert))
    page.get_by_label("Issuer's public key (PEM, obtained independently)").set_input_files(str(key))
    page.get_by_label("Subject id (optional)").fill(SUBJECT)
    page.get_by_label("Verification code (with the subject id)").fill(certified.code)
    page.get_by_role("button", name="Verify").click()
    expected = verify_certificate(
        certified.document, certified.pem, subject_id=SUBJECT, verification_code=certified.code
    )
    expect(page.get_by_role("status")).to_have_text(expected.summary())
    assert expected.summary().startswith("VERIFIED")
    tampered = tmp_path / "tampered.json"
    tampered.write_bytes(TAMPERS[7].apply(certified.document, certified.signer, certified.origin))
    page.get_by_label("Certificate (JSON)").set_input_files(str(tampered))
    page.get_by_role("button", name="Verify").click()
    expect(page.get_by_role("status")).to_contain_text("FAILED: event:tombstoned")
    row = page.locator("tr", has=page.get_by_text("event:tombstoned", exact=True))
    expect(row).to_contain_text("FAIL")


@dataclass
class Classes:
    nothing_held: bytes
    partial: bytes
    pem: bytes
    signer: Ed25519Signer
    origin: str


@pytest.fixture(scope="module")
def classes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Classes]:
    """A never-seen subject's certificate, and a partial one (a KMS that schedules destruction)."""
    settings = Settings(data_dir=tmp_path_factory.mktemp("classes") / "data")
    c = build(settings, create=True, wrap_kms=lambda kms: SchedulingKms(kms, timedelta(hours=1)))
    try:
        docs = []
        for subject in ("customer-9", SUBJECT):
            if subject == SUBJECT:
                c.memories.write(agent(), write_cmd("alice likes tea"))
            filed = c.erasure.request(officer(), subject, "gdpr-art17-1a", "DSR-9")
            c.erasure.run_pending()
            docs.append(c.reports.load(c.erasure.get(officer(), filed.id).report_id or "").document)
        yield Classes(docs[0], docs[1], c.audit.public_key().pem.encode(), c.reports.signer, c.audit.origin)
    finally:
        c.close()


def test_the_browser_checks_the_result_class_as_lethe_verify_does(offline: Visit, classes: Classes) -> None:
    assert json.loads(classes.nothing_held)["result"] == "nothing_held"
    assert json.loads(classes.partial)["result"] == "partial"
    for genuine in (classes.nothing_held, classes.partial):
        python = verify_certificate(genuine, classes.pem)
        browser = in_browser(offline.page, genuine, classes.pem)
        assert python.ok and browser["ok"], browser["summary"]
        assert [(c["name"], c["detail"]) for c in browser["checks"] if c["name"] == "result"] == [
            (c.name, c.detail) for c in python.checks if c.name == "result"
        ]
    contradictions = [
        (classes.nothing_held, {"result": "erased"}),
        (classes.partial, {"result": "erased", "missing": []}),
        (classes.partial, {"result": "nothing_held", "missing": []}),
        (classes.partial, {"missing": [{"part": "key_material", "generation": 2, "why": "another"}]}),
    ]
    for document, changes in contradictions:
        forged = sign_certificate({**json.loads(document), **changes}, classes.signer, classes.origin)
        python = verify_certificate(forged, classes.pem)
        browser = in_browser(offline.page, forged, classes.pem)
        assert failed(python.checks) == ["result"] == failed(browser["checks"]), changes
        assert browser["summary"] == python.summary()
