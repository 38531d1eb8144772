"""The console in a real browser (headless Chromium through Playwright), as its users use it.

An officer files a request and follows it to ``reported`` and its PDF; a reviewer promotes
and rejects; an auditor opens a verified certificate; an agent token opens nothing; a form
without its CSRF token is refused; every control has a label, and a request can be filed
with the keyboard alone. The ``visit`` fixture fails any test whose pages requested
anything from outside the server.
"""

from __future__ import annotations

import io
import re
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect
from pypdf import PdfReader

from lethe.api.console.pages import NAV
from lethe.vault.audit.verify import verify_certificate
from tests.browser.conftest import Console, Visit

pytestmark = pytest.mark.browser


def status_of(page: Any) -> str:
    return page.locator("#status").inner_text().strip()


def follow_until_reported(v: Visit, seconds: float = 40) -> None:
    """Press Refresh, as a person would, until the request page says reported."""
    deadline = time.monotonic() + seconds
    while status_of(v.page) != "reported":
        assert time.monotonic() < deadline, f"still {status_of(v.page)!r}"
        time.sleep(0.5)
        v.page.get_by_role("link", name="Refresh").click()
    expect(v.page.get_by_role("link", name="PDF")).to_be_visible()


def write_memory(
    console: Console, content: str, source: str = "web_page", subject: str = "alice@example.com"
) -> str:
    ref = f"https://example.com/{uuid.uuid4().hex[:6]}"
    body = {
        "subject_id": subject,
        "purpose": "support",
        "kind": "fact",
        "content": content,
        "provenance": {
            "source_type": source,
            "source_ref": ref,
            **({"url": ref} if source == "web_page" else {}),
        },
        "confidence": 0.7,
        "idempotency_key": uuid.uuid4().hex,
    }
    with console.http("agent") as http:
        r = http.post("/v1/memories", json=body)
        assert r.status_code == 201, r.text
        return r.json()["id"]


def reported_certificate(console: Console, subject: str) -> str:
    """A finished erasure (filed over the API), its report id."""
    write_memory(console, "prefers calls after 5pm", source="user_statement", subject=subject)
    with console.http("privacy_officer") as http:
        r = http.post("/v1/erasure-requests", json={"subject_id": subject, "legal_basis": "gdpr-art17-1a"})
        job = r.json()["id"]
        deadline = time.monotonic() + 40
        while (got := http.get(f"/v1/erasure-requests/{job}").json())["report_id"] is None:
            assert time.monotonic() < deadline
            time.sleep(0.3)
        return got["report_id"]


def test_an_officer_files_a_request_follows_it_to_reported_and_downloads_the_pdf(
    visit: Visit, console: Console
) -> None:
    subject = f"carol-{uuid.uuid4().hex[:6]}@example.com"
    write_memory(console, "Carol's order ships Tuesdays", source="user_statement", subject=subject)
    page = visit.page
    visit.sign_in(console.tokens["privacy_officer"])
    expect(page.locator("header").get_by_text("Dana Officer")).to_be_visible()
    page.get_by_role("link", name="File an erasure request").click()
    page.get_by_label("Subject id").fill(subject)
    page.get_by_label("Legal basis").select_option("gdpr-art17-1b")
    page.get_by_label("Your reference (optional)").fill("DSR-2026-001")
    page.get_by_label("Identity verification reference (optional)").fill("IDV-77")
    page.get_by_role("button", name="Preview the erasure").click()
    page.get_by_role("button", name="File the request").click()
    code = page.get_by_label("Verification code").input_value()
    assert re.fullmatch(r"[0-9A-Z-]{20,40}", code), code
    page.get_by_role("link", name="Follow the request").click()
    expect(page.get_by_role("heading", name="Erasure request DSR-2026-001")).to_be_visible()
    follow_until_reported(visit)
    assert page.get_by_text("Dana Officer").count() >= 1
    for step in ("tombstoned", "key destroyed", "verified", "reported"):
        assert page.locator("ol.timeline").get_by_text(step, exact=True).count() == 1, step
    with page.expect_download() as downloading:
        page.get_by_role("link", name="PDF").click()
    download = downloading.value
    assert download.suggested_filename.endswith(".pdf")
    pdf = PdfReader(io.BytesIO(Path(download.path()).read_bytes()))
    assert len(pdf.pages) >= 1 and "DSR-2026-001" in "".join(p.extract_text() for p in pdf.pages)
    with page.expect_download() as downloading:
        page.get_by_role("link", name="JSON (signed, for lethe verify)").click()
    certificate = Path(downloading.value.path()).read_bytes()
    with console.http("auditor") as http:
        pem = http.get("/v1/audit/public-key.pem").content
    checked = verify_certificate(certificate, pem, subject_id=subject, verification_code=code)
    assert checked.ok and "subject_commitment" in [c.name for c in checked.checks], checked.summary()
    page.get_by_role("link", name="Erasure requests").click()
    row = page.locator("tr", has=page.get_by_role("link", name="DSR-2026-001"))
    assert "reported" in row.inner_text()


def test_preview_confirm_filed_then_reload_files_nothing_and_hides_the_code(
    visit: Visit, console: Console
) -> None:
    subject = f"gus-{uuid.uuid4().hex[:6]}@example.com"
    write_memory(console, "Gus pays by card", source="user_statement", subject=subject)
    write_memory(console, "Gus lives in Porto", source="user_statement", subject=subject)

    def requests() -> int:
        with console.http("privacy_officer") as http:
            return len(http.get("/v1/erasure-requests").json()["items"])

    page = visit.page
    visit.sign_in(console.tokens["privacy_officer"])
    visit.go("/console/requests/new")
    page.get_by_label("Subject id").fill(subject)
    page.get_by_label("Your reference (optional)").fill("DSR-PRG-1")
    before = requests()
    page.get_by_role("button", name="Preview the erasure").click()
    expect(page.get_by_role("heading", name="Confirm the erasure request")).to_be_visible()
    assert page.locator("#preview-memories").inner_text().startswith("2 to forget")
    assert requests() == before  # the preview filed nothing
    page.get_by_role("button", name="File the request").click()
    page.wait_for_url("**/console/requests/*-*")  # 303 to the request page
    expect(page.get_by_role("heading", name="Erasure request filed")).to_be_visible()
    code = page.get_by_label("Verification code").input_value()
    assert code and code not in page.url
    assert requests() == before + 1
    page.reload()
    expect(page.get_by_role("heading", name="Erasure request DSR-PRG-1")).to_be_visible()
    assert page.get_by_label("Verification code").count() == 0 and code not in page.content()
    assert requests() == before + 1  # the reload filed nothing


def test_a_reviewer_promotes_one_memory_and_rejects_another(visit: Visit, console: Console) -> None:
    keep = write_memory(console, f"Alice's plan renews on the 3rd ({uuid.uuid4().hex[:4]})")
    drop = write_memory(console, f"Alice asked to wire money abroad ({uuid.uuid4().hex[:4]})")
    page = visit.page
    visit.sign_in(console.tokens["reviewer"])
    expect(page.get_by_role("heading", name="Review queue", level=1)).to_be_visible()
    expect(page.get_by_text("Alice's plan renews")).to_be_visible()
    page.get_by_role("button", name=f"Promote memory {keep[:8]}").click()
    expect(page.get_by_text("Memory promoted.")).to_be_visible()
    page.get_by_label("Reason for rejecting").nth(0).wait_for()
    card = page.locator("article", has=page.get_by_text("wire money abroad"))
    card.get_by_label("Reason for rejecting").fill("prompt injection from a web page")
    card.get_by_role("button", name=f"Reject memory {drop[:8]}").click()
    expect(page.get_by_text("Memory rejected.")).to_be_visible()
    assert (
        page.get_by_text("wire money abroad").count() == 0
        and page.get_by_text("renews on the 3rd").count() == 0
    )
    with console.http("agent") as http:
        assert http.get(f"/v1/memories/{keep}").json()["trust"] == "verified"
        assert http.get(f"/v1/memories/{drop}").status_code == 404


def test_an_auditor_opens_a_certificate_the_server_verified(visit: Visit, console: Console) -> None:
    report = reported_certificate(console, f"dave-{uuid.uuid4().hex[:6]}")
    page = visit.page
    visit.sign_in(console.tokens["auditor"])
    page.get_by_role("link", name="Certificates").click()
    page.get_by_role("link", name=report[:8]).click()
    expect(page.get_by_role("heading", name="Verified by this server")).to_be_visible()
    assert page.locator("span.fail").count() == 0 and page.locator("span.pass").count() >= 5
    with page.expect_download() as downloading:
        page.get_by_role("link", name="lethe-public.pem").click()
    assert Path(downloading.value.path()).read_text().startswith("-----BEGIN PUBLIC KEY-----")
    page.get_by_role("link", name="Audit log").click()
    page.get_by_role("button", name="Check consistency").click()
    expect(page.get_by_text("Consistent:")).to_be_visible()


def test_an_agent_token_cannot_open_any_console_page(visit: Visit, console: Console) -> None:
    page = visit.page
    visit.sign_in(console.tokens["agent"])
    expect(page.get_by_text("cannot use the console")).to_be_visible()
    for p in NAV:
        response = visit.go(p.path)
        assert response is not None and page.url == f"{console.url}/console/sign-in", p.path
        expect(page.get_by_role("heading", name="Sign in")).to_be_visible()


def test_a_form_posted_without_its_csrf_token_is_refused(visit: Visit, console: Console) -> None:
    page = visit.page
    visit.sign_in(console.tokens["privacy_officer"])
    visit.go("/console/holds")
    page.get_by_label("Subject id").fill("erin@example.com")
    page.get_by_label("Reason").fill("litigation")
    page.evaluate("document.querySelectorAll('main form input[name=csrf_token]').forEach(e => e.remove())")
    page.get_by_role("button", name="Place the hold").click()
    expect(page.get_by_role("heading", name="Form refused")).to_be_visible()
    visit.go("/console/holds")
    expect(page.get_by_text("litigation")).to_have_count(0)


PAGES_BY_ROLE = {
    "privacy_officer": [
        "/console/requests",
        "/console/requests/new",
        "/console/holds",
        "/console/subjects",
        "/console/retractions",
        "/console/certificates",
    ],
    "reviewer": ["/console/review", "/console/retractions"],
    "auditor": ["/console/certificates", "/console/audit", "/console/requests", "/console/kpis"],
    "admin": ["/console/tokens"],
}
UNLABELLED = """() => [...document.querySelectorAll('input:not([type=hidden]), select, textarea, button, a')]
  .filter(e => {
    const name = (e.getAttribute('aria-label') || '').trim()
      || [...(e.labels || [])].map(l => l.innerText).join('').trim()
      || (['BUTTON', 'A'].includes(e.tagName) ? e.innerText.trim() : '');
    return !name;
  }).map(e => e.outerHTML.slice(0, 120))"""


@pytest.mark.parametrize("role", sorted(PAGES_BY_ROLE))
def test_every_control_on_every_page_has_a_label(visit: Visit, console: Console, role: str) -> None:
    if role == "reviewer":
        write_memory(console, "so the queue has a form to check")
    visit.sign_in(console.tokens[role])
    for path in PAGES_BY_ROLE[role]:
        visit.go(path)
        assert visit.page.evaluate(UNLABELLED) == [], path
        assert visit.page.locator("h1").count() == 1 and visit.page.locator("html[lang=en]").count() == 1


def test_a_request_can_be_filed_with_the_keyboard_alone(visit: Visit, console: Console) -> None:
    page = visit.page
    visit.sign_in(console.tokens["privacy_officer"])
    visit.go("/console/requests")
    keyboard = page.keyboard
    keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Skip to content"

    def tab_to(predicate: str, limit: int = 30) -> None:
        for _ in range(limit):
            keyboard.press("Tab")
            if page.evaluate(predicate):
                return
        raise AssertionError(f"never reached {predicate}")

    tab_to("document.activeElement.textContent === 'File an erasure request'")
    keyboard.press("Enter")
    page.wait_for_url("**/console/requests/new")
    tab_to("document.activeElement.id === 'subject_id'")
    subject = f"frank-{uuid.uuid4().hex[:6]}"
    keyboard.type(subject)
    keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "legal_basis"
    keyboard.press("ArrowDown")  # the second ground: consent withdrawn
    keyboard.press("Tab")
    keyboard.type("KBD-1")
    keyboard.press("Tab")
    keyboard.type("IDV-KBD")
    # past the optional identifiers of the residue hunt and its choice, to the button
    tab_to("document.activeElement.textContent === 'Preview the erasure'", limit=5)
    keyboard.press("Enter")
    expect(page.get_by_role("heading", name="Confirm the erasure request")).to_be_visible()
    tab_to("document.activeElement.textContent === 'File the request'")
    keyboard.press("Enter")
    expect(page.get_by_role("heading", name="Erasure request filed")).to_be_visible()
    tab_to("document.activeElement.textContent === 'Follow the request'")
    keyboard.press("Enter")
    page.wait_for_url("**/console/requests/*-*")
    expect(page.get_by_role("heading", name="Erasure request KBD-1")).to_be_visible()
    assert "GDPR Art. 17(1)(b)" in page.locator("dl.facts").inner_text()  # the basis in words, not its code


@pytest.mark.parametrize("path", ["/docs", "/redoc"])
def test_the_api_docs_render_with_nothing_from_outside(visit: Visit, path: str) -> None:
    visit.go(path)
    if path == "/docs":
        visit.page.locator(".swagger-ui .info .title").wait_for()
        assert "Lethe" in visit.page.locator(".swagger-ui .info .title").inner_text()
    else:  # ReDoc's attribution logo (its vendor's CDN) is refused by the page's CSP, never sent
        visit.page.get_by_text("crypto-shredding privacy vault", exact=False).first.wait_for()
