"""Key-service waiting windows in the certificate, and the final certificate that follows.

Immediate destruction (the real local KMS, a real OpenBao's Transit hard delete) is said
so, with the inventory of key copies (NIST SP 800-88). A KMS that schedules destruction
(``tests.scheduling_kms`` over the real local KMS) makes the first certificate state the
window; the runner issues the final certificate, chained to the first, once the KMS
confirms the material destroyed. Over real SQLite and PostgreSQL.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from lethe.api.bootstrap import Container, build
from lethe.api.report_formats import ReportFormat, render_report
from lethe.api.settings import Settings
from lethe.vault.audit.step_names import Step
from lethe.vault.audit.verify import verify_certificate
from lethe.vault.canonical import canonical_json
from lethe.vault.clock import parse_iso, utcnow
from lethe.vault.erasure.model import ErasureJob
from lethe.vault.oversight.certificate import sign_certificate
from tests.conftest import agent, officer, write_cmd
from tests.integration.test_certificate import run_lethe
from tests.integration.test_result_classes import pdf_text
from tests.scheduling_kms import SchedulingKms

ALICE = "alice@example.com"
WINDOW = timedelta(seconds=2)


def forget(c: Container) -> tuple[ErasureJob, bytes]:
    c.memories.write(agent(), write_cmd("alice likes tea"))
    filed = c.erasure.request(officer(), ALICE, "gdpr-art17-1a", "DSR-1")
    c.erasure.run_pending()
    job = replace(c.erasure.get(officer(), filed.id), verification_code=filed.verification_code)
    assert job.report_id is not None, job.last_error
    return job, c.reports.load(job.report_id).document


def pem(c: Container) -> bytes:
    return c.audit.public_key().pem.encode()


def test_immediate_destruction_is_said_so_with_every_copy_of_the_key_and_no_final_certificate(
    shredder: Container,
) -> None:
    job, cert = forget(shredder)
    doc = json.loads(cert)
    kd = doc["key_destruction"]
    assert (kd["mode"], kd["pending_until"], kd["cancellable"], kd["window_closed"]) == (
        "immediate",
        None,
        False,
        True,
    )
    (receipt,) = next(s for s in doc["steps"] if s["name"] == "key_destroyed")["evidence"]["receipts"]
    assert receipt["destruction"] == "immediate" and receipt["irrecoverable_after"] == receipt["destroyed_at"]
    copies = kd["key_copies"]
    assert copies["nist_sp_800_88_purge"] is True
    kinds = [c["copy"] for c in copies["copies"]]
    assert kinds[0] == f"key-encryption key at the KMS ({shredder.kms.backend})"
    assert any("backups" in k for k in kinds) and any("DEK caches" in k for k in kinds)
    assert all(c["fate"] for c in copies["copies"])
    assert verify_certificate(
        cert, pem(shredder), subject_id=ALICE, verification_code=job.verification_code
    ).ok
    shredder.erasure.run_pending()
    assert shredder.erasure.get(officer(), job.id).final_report_id is None


@pytest.fixture
def scheduling(settings: Settings) -> Iterator[Container]:
    c = build(settings, create=True, wrap_kms=lambda kms: SchedulingKms(kms, WINDOW))
    yield c
    c.close()


def test_a_scheduled_destruction_states_its_window_and_a_chained_final_certificate_follows(
    scheduling: Container, settings: Settings, tmp_path: Path
) -> None:
    c = scheduling
    job, first = forget(c)
    key = pem(c)
    kd = json.loads(first)["key_destruction"]
    assert (kd["mode"], kd["cancellable"], kd["window_closed"]) == ("scheduled", True, False)
    assert (
        kd["pending_until"]
        and kd["irrecoverable_after"]
        and kd["key_copies"]["nist_sp_800_88_purge"] is False
    )
    assert verify_certificate(first, key, subject_id=ALICE, verification_code=job.verification_code).ok
    # v3: the first certificate is partial, naming the key material still awaiting destruction
    (missing,) = json.loads(first)["missing"]
    assert json.loads(first)["result"] == "partial"
    assert (missing["part"], missing["generation"]) == ("key_material", 1)
    assert "has not confirmed its material destroyed" in missing["why"]
    report = c.reports.load(job.report_id or "")
    for fmt in (ReportFormat.HTML, ReportFormat.PDF):
        rendered = render_report(report, key, fmt)
        text = rendered.decode() if fmt is ReportFormat.HTML else pdf_text(rendered)
        assert "Result: Partial" in text and "Not done: key generation 1" in text, fmt
        assert "Encryption keys made unusable" in text and "Encryption keys destroyed" not in text, fmt
    c.erasure.run_pending()  # the window is still open: no final certificate yet
    assert c.erasure.get(officer(), job.id).final_report_id is None

    while utcnow() <= parse_iso(kd["irrecoverable_after"]):
        time.sleep(0.2)
    c.erasure.run_pending()
    done = c.erasure.get(officer(), job.id)
    assert done.final_report_id is not None and done.steps[-1].step == Step.KEY_IRRECOVERABLE
    final = c.reports.get(officer(), done.final_report_id).document
    doc = json.loads(final)
    assert doc["supersedes"] == {
        "report_id": job.report_id,
        "certificate_sha256": c.reports.load(job.report_id or "").sha256,
    }
    assert (doc["key_destruction"]["window_closed"], doc["key_destruction"]["cancellable"]) == (True, False)
    assert (doc["result"], doc["missing"]) == ("erased", [])  # the KMS confirmed: no part missing
    result = verify_certificate(
        final, key, subject_id=ALICE, verification_code=job.verification_code, previous=first
    )
    assert result.ok, result.summary()
    assert "chain" in {ch.name for ch in result.checks}
    assert verify_certificate(final, key, previous=first + b" ").failed == ["chain"]
    files = {"first.json": first, "final.json": final, "key.pem": key}
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    base = ("verify", str(tmp_path / "final.json"), "--public-key", str(tmp_path / "key.pem"))
    cli = run_lethe(settings, *base, "--previous", str(tmp_path / "first.json"))
    assert cli.returncode == 0 and "chain" in cli.stdout, cli.stdout
    assert run_lethe(settings, *base, "--previous", str(tmp_path / "key.pem")).returncode == 1
    c.erasure.run_pending()  # idempotent: one final certificate per request
    assert c.erasure.get(officer(), job.id).final_report_id == done.final_report_id


def test_a_window_claimed_closed_without_the_kms_confirming_it_fails(scheduling: Container) -> None:
    _, first = forget(scheduling)

    def claim_closed(d: dict[str, Any]) -> None:
        d["key_destruction"]["window_closed"] = True

    forged = sign_certificate(
        claim_closed(doc := json.loads(first)) or doc, scheduling.reports.signer, scheduling.audit.origin
    )
    assert "evidence" in verify_certificate(forged, pem(scheduling)).failed

    def claim_immediate(d: dict[str, Any]) -> None:
        d["key_destruction"]["mode"] = "immediate"

    forged = sign_certificate(
        claim_immediate(doc := json.loads(first)) or doc, scheduling.reports.signer, scheduling.audit.origin
    )
    assert "evidence" in verify_certificate(forged, pem(scheduling)).failed
    # v3: claiming the partial certificate erased (nothing missing) fails the result check alone
    claimed = {**json.loads(first), "result": "erased", "missing": []}
    forged = sign_certificate(claimed, scheduling.reports.signer, scheduling.audit.origin)
    assert verify_certificate(forged, pem(scheduling)).failed == ["result"]
    assert canonical_json(json.loads(first)) == first
