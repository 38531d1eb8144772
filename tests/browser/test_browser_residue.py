"""The browser verifier checks the residue hunt's counts as ``lethe verify`` does.

A certificate of a request filed with identifiers (review chosen: one memory of another
subject found and pending) passes the same checks in headless Chromium as in Python;
copies re-signed with the issuer's key whose counts contradict the hunt's logged evidence
(a finding dropped, a pending memory counted as retracted, the counts removed) fail the
``residue`` check, and only it, in both.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from lethe.api.bootstrap import build
from lethe.api.settings import Settings
from lethe.keys.signing import Ed25519Signer
from lethe.vault.audit.verify import verify_certificate
from lethe.vault.oversight.certificate import sign_certificate
from tests.browser.conftest import Visit
from tests.browser.test_browser_verifier import failed, in_browser, offline  # noqa: F401 (fixture)
from tests.conftest import agent, officer, write_cmd

pytestmark = pytest.mark.browser


@dataclass
class Hunted:
    document: bytes
    pem: bytes
    signer: Ed25519Signer
    origin: str


@pytest.fixture(scope="module")
def hunted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Hunted]:
    c = build(Settings(data_dir=tmp_path_factory.mktemp("residue") / "data"), create=True)
    try:
        c.memories.write(agent(), write_cmd("Ana García's card ends 4471", subject="customer-42"))
        filed = c.erasure.request(
            officer(),
            "ana@example.com",
            "gdpr-art17-1a",
            None,
            identifiers=["Ana García"],
            residue_action="review",
        )
        c.erasure.run_pending()
        report = c.reports.load(c.erasure.get(officer(), filed.id).report_id or "")
        yield Hunted(report.document, c.audit.public_key().pem.encode(), c.reports.signer, c.audit.origin)
    finally:
        c.close()


def test_a_certificate_with_residue_counts_passes_the_same_checks_in_the_browser(
    offline: Visit,  # noqa: F811
    hunted: Hunted,
) -> None:
    python = verify_certificate(hunted.document, hunted.pem)
    browser = in_browser(offline.page, hunted.document, hunted.pem)
    assert python.ok and browser["ok"], browser["summary"]
    assert [c["name"] for c in browser["checks"]] == [c.name for c in python.checks]
    assert "residue" in [c.name for c in python.checks]
    assert [c["detail"] for c in browser["checks"]] == [c.detail for c in python.checks]


def _forgeries(doc: dict[str, Any]) -> list[dict[str, Any]]:
    counts = doc["residue"]
    return [
        {**doc, "residue": {**counts, "found": 0}},
        {**doc, "residue": {**counts, "pending_review": 0, "retracted": 1}},
        {k: v for k, v in doc.items() if k != "residue"},
    ]


@pytest.mark.parametrize("n", [0, 1, 2], ids=["finding-dropped", "pending-as-retracted", "counts-removed"])
def test_counts_that_contradict_the_evidence_fail_residue_in_both(
    offline: Visit,  # noqa: F811
    hunted: Hunted,
    n: int,
) -> None:
    forged = _forgeries(json.loads(hunted.document))[n]
    document = sign_certificate(forged, hunted.signer, hunted.origin)
    python = verify_certificate(document, hunted.pem)
    browser = in_browser(offline.page, document, hunted.pem)
    assert failed(python.checks) == ["residue"], python.summary()
    assert failed(browser["checks"]) == ["residue"], browser["summary"]
