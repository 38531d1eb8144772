"""A KMS that refuses to destroy a key, past Lethe's window, ends in a final ``partial`` certificate.

A real OpenBao whose token's policy is Lethe's minimal policy without ``delete`` on the
Transit keys: every write works, and the key's destruction is refused (403) each time
Lethe asks. Within the refusal window the job waits in ``key_destruction_pending`` with no
certificate (the control); past it the runner stops asking and issues one certificate,
``partial``, naming the refused generation as ``final``, whose every rendering says the
key was refused, never destroyed, and which the verifier holds to its evidence. Over real
SQLite and PostgreSQL.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import hvac
import pytest
from pydantic import SecretStr

from lethe.api.bootstrap import Container, build
from lethe.api.report_formats import ReportFormat, render_report
from lethe.api.settings import Settings
from lethe.vault.audit.verify import verify_certificate
from lethe.vault.custody.keyring import key_name
from lethe.vault.erasure.model import KEY_PENDING
from lethe.vault.oversight.certificate import sign_certificate
from tests.conftest import agent, officer, write_cmd
from tests.integration.test_result_classes import DESTROYED_CLAIMS, pdf_text
from tests.integration.test_vault_transit import token_with_policies
from tests.openbao import OpenBaoDevServer

POLICY = Path(__file__).resolve().parents[2] / "src" / "lethe" / "keys" / "vault_policy.hcl"
WINDOW_SECONDS = 1.5
ALICE = "alice@example.com"


def refusing_policy() -> str:
    """Lethe's minimal policy, minus the one capability destruction needs: delete."""
    text = POLICY.read_text()
    refusing = text.replace(
        'capabilities = ["read", "update", "delete"]', 'capabilities = ["read", "update"]'
    )
    assert refusing != text
    return refusing


@pytest.fixture
def refusing(settings: Settings, openbao: OpenBaoDevServer) -> Iterator[tuple[Container, hvac.Client]]:
    root = openbao.client(openbao.token)
    root.sys.create_or_update_policy("lethe-no-delete", refusing_policy())
    vault = {
        "kms": "vault",
        "vault_addr": openbao.addr,
        "vault_token": SecretStr(token_with_policies(root, "lethe-no-delete")),
        "kms_timeout_seconds": 2.0,
        "erasure_kms_refusal_window_seconds": WINDOW_SECONDS,
    }
    c = build(settings.model_copy(update=vault), create=True)
    yield c, root
    c.close()


def resigned(c: Container, document: bytes, change: Any) -> bytes:
    doc = json.loads(document)
    change(doc)
    return sign_certificate(doc, c.reports.signer, c.audit.origin)


def test_a_kms_refusing_past_the_window_ends_in_a_final_partial_certificate_naming_the_key(
    refusing: tuple[Container, hvac.Client],
) -> None:
    c, root = refusing
    pem = c.audit.public_key().pem.encode()
    c.memories.write(agent(), write_cmd("alice likes tea"))
    filed = c.erasure.request(officer(), ALICE, "gdpr-art17-1a", "DSR-7")
    started = time.monotonic()
    c.erasure.run_pending()
    waiting = c.erasure.get(officer(), filed.id)
    # within the window: the refusal is asked again, nothing is certified
    assert (waiting.status, waiting.report_id) == (KEY_PENDING, None), waiting
    assert "KMS refused key destruction (KmsForbidden)" in (waiting.last_error or "")

    time.sleep(max(0.0, WINDOW_SECONDS - (time.monotonic() - started)) + 0.2)
    c.erasure.run_pending()
    job = c.erasure.get(officer(), filed.id)
    assert job.completed_at is not None and job.report_id is not None, job.last_error
    doc = c.reports.load(job.report_id).parsed()
    (missing,) = doc["missing"]
    assert (doc["result"], missing["part"], missing["generation"], missing["final"]) == (
        "partial",
        "key_material",
        1,
        True,
    )
    assert "refused to destroy it (KmsForbidden)" in missing["why"] and "no later one" in missing["why"]
    steps = {s["name"]: s["evidence"] for s in doc["steps"]}
    (refusal,) = steps["key_destroyed"]["refused"]
    assert (steps["key_destroyed"]["keys_destroyed"], steps["key_destroyed"]["receipts"]) == (0, [])
    assert (refusal["backend"], refusal["error"], refusal["window_seconds"]) == ("vault", "KmsForbidden", 1)
    (probe,) = steps["verified"]["key_probes"]
    assert (probe["destroyed"], probe["key_present"], probe["refused"]) == (False, True, True)
    assert steps["key_destroyed"]["key_copies"]["nist_sp_800_88_purge"] is False
    assert doc["key_destruction"]["refused_generations"] == [1]
    # the evidence is the truth: the key is still at OpenBao. The receipt names it under the
    # request's own subject reference (unlinkable); the KMS name is the stable reference's.
    kms_name = key_name(job.tenant_id, c.pseudonyms.subject_ref(job.tenant_id, ALICE), 1)
    assert refusal["key_ref"] != kms_name
    assert refusal["key_ref"] == key_name(job.tenant_id, job.event_subject_ref, 1)
    assert root.secrets.transit.read_key(kms_name)["data"]["name"] == kms_name

    checked = verify_certificate(
        c.reports.load(job.report_id).document,
        pem,
        subject_id=ALICE,
        verification_code=filed.verification_code,
    )
    assert checked.ok, checked.summary()
    report = c.reports.load(job.report_id)
    for fmt in (ReportFormat.HTML, ReportFormat.PDF):
        rendered = render_report(report, pem, fmt)
        text = rendered.decode() if fmt is ReportFormat.HTML else pdf_text(rendered)
        assert "Result: Partial" in text, fmt
        assert "refused to destroy" in text and "Encryption keys the key manager refused to destroy" in text
        assert "This is the final certificate of this request" in text, fmt
        claims = DESTROYED_CLAIMS.findall(text)
        assert not claims, (fmt, claims)
        assert "unreadable" not in text.replace("nothing readable", ""), fmt

    # final: no further certificate, and the runner does not take the job up again
    c.erasure.run_pending()
    after = c.erasure.get(officer(), filed.id)
    assert (after.final_report_id, after.report_id, after.status) == (None, job.report_id, job.status)


def test_the_verifier_holds_a_refusal_certificate_to_its_evidence(
    refusing: tuple[Container, hvac.Client],
) -> None:
    c, _ = refusing
    pem = c.audit.public_key().pem.encode()
    c.memories.write(agent(), write_cmd("alice likes tea"))
    filed = c.erasure.request(officer(), ALICE, "gdpr-art17-1a", "DSR-8")
    c.erasure.run_pending()
    time.sleep(WINDOW_SECONDS + 0.2)
    c.erasure.run_pending()
    job = c.erasure.get(officer(), filed.id)
    assert job.report_id is not None, job.last_error
    document = c.reports.load(job.report_id).document
    assert verify_certificate(document, pem).ok  # the control: as issued, it verifies

    def erased(d: dict[str, Any]) -> None:  # an `erased` claim over a refused destruction
        d.update(result="erased", missing=[])

    def not_final(d: dict[str, Any]) -> None:  # a refused part said to be supplied later
        d["missing"][0]["final"] = False

    def nothing_missing(d: dict[str, Any]) -> None:
        d["missing"] = []

    for change in (erased, not_final, nothing_missing):
        assert verify_certificate(resigned(c, document, change), pem).failed == ["result"], change.__name__

    def probe_not_logged(d: dict[str, Any]) -> None:  # a probe said refused with no refusal logged
        step = next(s for s in d["steps"] if s["name"] == "key_destroyed")
        del step["evidence"]["refused"]

    assert "evidence" in verify_certificate(resigned(c, document, probe_not_logged), pem).failed
