"""Erasure certificates verify offline, and every kind of tampering fails a named check.

Over real SQLite and PostgreSQL (the ``lethe`` fixture). The CLI tests run the installed
``lethe`` entry point in a subprocess, as an auditor would.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from pypdf import PdfReader

from lethe.api.bootstrap import Container
from lethe.api.settings import Settings
from lethe.keys.signing import Ed25519Signer
from lethe.vault.audit.certificate_format import KEYED_SCHEME, keyed_subject_commitment
from lethe.vault.audit.checkpoint import Checkpoint, key_id, sign_checkpoint
from lethe.vault.audit.step_names import Step
from lethe.vault.audit.verify import verify_certificate
from lethe.vault.canonical import canonical_json
from lethe.vault.clock import parse_iso
from lethe.vault.erasure.deadlines import add_months
from lethe.vault.oversight.certificate import sign_certificate
from lethe.vault.oversight.render import render_html, render_pdf
from lethe.vault.store.events import Event, SqlEventLog
from lethe.vault.store.tables import backups
from tests.children import lethe_env
from tests.conftest import agent, officer, write_cmd

ALICE = "alice@example.com"
LETHE = Path(sys.executable).parent / "lethe"
# Every check a tampered certificate can fail; a failure outside this set is a bug.
INTEGRITY = {"parse", "canonical_form", "signature"}


def forget(c: Container, subject: str = ALICE, reference: str = "ticket-1"):  # type: ignore[no-untyped-def]
    for i in range(3):
        c.memories.write(agent(), write_cmd(f"alice likes tea {i}", subject=subject))
    c.memories.write(agent(), write_cmd("bob likes coffee", subject="bob@example.com"))
    filed = c.erasure.request(officer(), subject, "gdpr-art17-1a", reference)
    c.erasure.run_pending()
    job = replace(c.erasure.get(officer(), filed.id), verification_code=filed.verification_code)
    assert job.status == c.erasure.final_status, job.last_error
    return job, c.reports.load(job.report_id)


def pem(c: Container) -> bytes:
    return c.audit.public_key().pem.encode()


def edit(doc: bytes, change: Any) -> bytes:
    """Apply ``change`` to the parsed certificate; keep the (now stale) signature."""
    parsed = json.loads(doc)
    change(parsed)
    return canonical_json(parsed)


def resign(doc: bytes, signer: Ed25519Signer, origin: str) -> bytes:
    """What a dishonest holder of the signing key could produce."""
    return sign_certificate(json.loads(doc), signer, origin)


def step(parsed: dict[str, Any], name: str) -> dict[str, Any]:
    return next(s for s in parsed["steps"] if s["name"] == name)


def run_lethe(settings: Settings, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = lethe_env(settings.data_dir)
    if settings.database_url:
        env["LETHE_DATABASE_URL"] = settings.database_url
    env["COLUMNS"] = "200"
    return subprocess.run(
        [str(LETHE), *args], capture_output=True, text=True, env=env, input=stdin, timeout=120, check=False
    )


# -- a genuine certificate ------------------------------------------------------------------


def test_a_completed_forget_produces_a_certificate_that_verifies_offline(lethe: Container) -> None:
    job, report = forget(lethe)
    code = job.verification_code
    result = verify_certificate(
        report.document, pem(lethe), subject_id=ALICE, tenant="t1", verification_code=code
    )
    assert result.ok, result.summary()
    doc = report.parsed()
    covered = [s["name"] for s in doc["steps"]]
    assert covered == [s.step for s in job.steps][:-1] and job.steps[-1].step == Step.REPORTED
    assert covered[:5] == ["received", "tombstoned", "derived_purged", "key_destroyed", "verified"]
    names = {c.name for c in result.checks}
    assert {f"inclusion:{n}" for n in covered} <= names and {f"event:{n}" for n in covered} <= names
    assert {"signature", "checkpoint_signature", "step_order", "evidence", "subject_commitment"} <= names
    assert job.report_id == report.id == doc["report_id"]


def test_the_certificate_states_the_request_the_subject_commitment_and_what_remains(lethe: Container) -> None:
    job, report = forget(lethe)
    doc = report.parsed()
    assert doc["format"] == "lethe-erasure-certificate/v3" and doc["tenant_id"] == "t1"
    assert (doc["result"], doc["missing"]) == ("erased", [])
    req = doc["request"]
    assert (req["id"], req["legal_basis"], req["reference"], req["requested_by"]) == (
        job.id,
        "gdpr-art17-1a",
        "ticket-1",
        "officer-1",
    )
    assert parse_iso(req["due_at"]) == add_months(parse_iso(req["received_at"]), 1)
    assert req["completed_at"] == doc["steps"][-1]["completed_at"]
    assert "salt" not in doc["subject"] and doc["subject"]["commitment_scheme"] == KEYED_SCHEME
    assert job.verification_code is not None
    commitment = keyed_subject_commitment(job.verification_code, "t1", ALICE)
    assert doc["subject"]["commitment"] == commitment == job.subject_commitment
    assert job.verification_code not in report.document.decode()
    assert ALICE not in report.document.decode()  # the subject id itself is never in the certificate
    remains = " ".join(r["item"] for r in doc["what_remains"])
    for item in (
        "memory ids",
        "subject_ref",
        "content_hmac",
        "ciphertext digests",
        "audit tree",
        "timestamps",
    ):
        assert item in remains
    assert all(r["why"] for r in doc["what_remains"])
    key = step(doc, "key_destroyed")["evidence"]
    assert key["keys_destroyed"] == 1 and key["receipts"][0]["key_unusable"] is True
    info = lethe.audit.public_key()
    assert doc["issuer"] == {
        "origin": info.origin,
        "key_id": info.key_id,
        "public_key_sha256": info.fingerprint,
    }


def test_backup_coverage_lists_the_backups_taken_before_the_forget_event(lethe: Container) -> None:
    with lethe.uow.write() as conn:
        conn.execute(
            backups.insert(),
            [
                {
                    "id": "b-before",
                    "created_at": "2026-01-01T00:00:00.000000Z",
                    "tree_size": 1,
                    "location": "x",
                },
                {
                    "id": "b-later",
                    "created_at": "2026-01-02T00:00:00.000000Z",
                    "tree_size": 10**6,
                    "location": "y",
                },
            ],
        )
    _, report = forget(lethe)
    coverage = report.parsed()["backup_coverage"]
    assert [b["id"] for b in coverage["backups_before_forget"]] == ["b-before"]
    assert "destroyed" in coverage["statement"] and "location" not in coverage["backups_before_forget"][0]


def test_the_reported_step_is_not_inside_its_own_certificate_but_logs_its_digest(lethe: Container) -> None:
    job, report = forget(lethe)
    reported = job.steps[-1]
    doc = report.parsed()
    size = int(doc["checkpoint"]["note"].split("\n")[1])
    assert reported.event_seq > size  # logged after the checkpoint the certificate is anchored to
    assert reported.evidence == {
        "report_id": report.id,
        "checkpoint_tree_size": size,
        "certificate_sha256": hashlib.sha256(report.document).hexdigest(),
    }
    assert Step.REPORTED in doc["covers"]
    # Issuing again (a rerun after a crash) returns the same certificate, byte for byte.
    filed = lethe.erasure.get(officer(), job.id)
    with lethe.uow.maintenance("erasure runner"):  # the runner is the certificate's one issuer
        again = lethe.reports.issue(filed)
    assert (again.id, again.document) == (report.id, report.document)


# -- the tamper matrix ------------------------------------------------------------------------


def test_flipping_any_single_byte_of_the_certificate_fails_a_named_integrity_check(lethe: Container) -> None:
    _, report = forget(lethe)
    doc, key = report.document, pem(lethe)
    sig_value = json.loads(doc)["signature"]["value"].encode()
    sig_at = doc.index(sig_value)
    positions = sorted(set(range(0, len(doc), 7)) | set(range(sig_at, sig_at + len(sig_value))))
    assert len(positions) > 200
    for pos in positions:
        flipped = bytearray(doc)
        flipped[pos] ^= 0x01
        result = verify_certificate(bytes(flipped), key, subject_id=ALICE)
        assert not result.ok, f"byte {pos} flipped and the certificate still verified"
        assert INTEGRITY & set(result.failed), (pos, result.failed)
        assert result.first_failure is not None and result.first_failure.name in INTEGRITY | {"format"}


def test_changing_a_step_time_fails_the_signature_and_contradicts_the_logged_event(lethe: Container) -> None:
    _, report = forget(lethe)
    signer, origin = lethe.reports.signer, lethe.audit.origin

    def later(d: dict[str, Any]) -> None:
        s = step(d, "key_destroyed")
        s["completed_at"] = s["completed_at"][:-4] + "999Z"

    tampered = edit(report.document, later)
    result = verify_certificate(tampered, pem(lethe))
    assert {"signature", "event:key_destroyed"} <= set(result.failed)
    assert result.first_failure.name == "signature"
    # Even re-signed with the real key, the claim contradicts the event in the signed log.
    result = verify_certificate(resign(tampered, signer, origin), pem(lethe))
    assert "signature" not in result.failed and "event:key_destroyed" in result.failed


def test_changing_a_count_fails_the_signature_and_contradicts_the_logged_event(lethe: Container) -> None:
    _, report = forget(lethe)

    def fewer(d: dict[str, Any]) -> None:
        step(d, "tombstoned")["evidence"]["memories_forgotten"] -= 1

    tampered = edit(report.document, fewer)
    result = verify_certificate(tampered, pem(lethe))
    assert {"signature", "event:tombstoned"} <= set(result.failed)
    result = verify_certificate(resign(tampered, lethe.reports.signer, lethe.audit.origin), pem(lethe))
    assert result.failed == ["event:tombstoned"]
    assert "memories_forgotten" in result.first_failure.detail


def test_swapping_two_inclusion_proofs_fails_both_inclusion_checks(lethe: Container) -> None:
    _, report = forget(lethe)

    def swap(d: dict[str, Any]) -> None:
        a, b = step(d, "tombstoned"), step(d, "verified")
        assert a["inclusion_proof"] != b["inclusion_proof"]
        a["inclusion_proof"], b["inclusion_proof"] = b["inclusion_proof"], a["inclusion_proof"]

    tampered = edit(report.document, swap)
    assert {"signature", "inclusion:tombstoned", "inclusion:verified"} <= set(
        verify_certificate(tampered, pem(lethe)).failed
    )
    resigned = verify_certificate(resign(tampered, lethe.reports.signer, lethe.audit.origin), pem(lethe))
    assert resigned.failed == ["inclusion:tombstoned", "inclusion:verified"]


def test_another_signing_key_fails_against_the_pinned_key(lethe: Container) -> None:
    _, report = forget(lethe)
    origin = lethe.audit.origin
    mallory = Ed25519Signer.generate()
    # The document re-signed by another key, checked against the pinned key.
    result = verify_certificate(resign(report.document, mallory, origin), pem(lethe))
    assert result.first_failure.name == "signature" and "pinned" in result.first_failure.detail
    # The genuine certificate checked against the wrong key fails both signatures.
    result = verify_certificate(report.document, mallory.public_key_pem())
    assert {"signature", "checkpoint_signature"} <= set(result.failed)

    # A complete forgery under another key (checkpoint and issuer too) passes only for
    # whoever pins that key: pinning the issuer's real key is what defeats it.
    def forge(d: dict[str, Any]) -> None:
        raw = mallory.public_key_raw()
        d["issuer"]["key_id"] = key_id(origin, raw).hex()
        d["issuer"]["public_key_sha256"] = hashlib.sha256(raw).hexdigest()
        note = d["checkpoint"]["note"]
        body = note[: note.rfind("\n\n") + 1]
        d["checkpoint"]["note"] = sign_checkpoint(Checkpoint.from_body(body), origin, mallory)

    forged = resign(edit(report.document, forge), mallory, origin)
    assert verify_certificate(forged, mallory.public_key_pem()).ok
    assert {"signature", "checkpoint_signature"} <= set(verify_certificate(forged, pem(lethe)).failed)


def test_claiming_a_different_subject_or_tenant_fails_the_commitment_check(lethe: Container) -> None:
    job, report = forget(lethe)
    code = job.verification_code
    assert verify_certificate(report.document, pem(lethe), subject_id=ALICE, verification_code=code).ok
    wrong = verify_certificate(
        report.document, pem(lethe), subject_id="mallory@example.com", verification_code=code
    )
    assert wrong.failed == ["subject_commitment"]
    assert verify_certificate(report.document, pem(lethe), tenant="t2").failed == ["tenant"]

    def other_commitment(d: dict[str, Any]) -> None:
        d["subject"]["commitment"] = "00" * 32

    assert {"signature", "event:received", "subject_commitment"} <= set(
        verify_certificate(
            edit(report.document, other_commitment), pem(lethe), subject_id=ALICE, verification_code=code
        ).failed
    )


def test_removing_a_step_or_reordering_steps_fails_step_order(lethe: Container) -> None:
    _, report = forget(lethe)
    signer, origin = lethe.reports.signer, lethe.audit.origin

    def drop_key_destruction(d: dict[str, Any]) -> None:
        d["steps"] = [s for s in d["steps"] if s["name"] != "key_destroyed"]

    def reorder(d: dict[str, Any]) -> None:
        d["steps"][1], d["steps"][2] = d["steps"][2], d["steps"][1]

    for change in (drop_key_destruction, reorder):
        result = verify_certificate(resign(edit(report.document, change), signer, origin), pem(lethe))
        assert "step_order" in result.failed, change.__name__


# -- through the real CLI ----------------------------------------------------------------------


def test_lethe_verify_exits_0_on_the_untouched_certificate_and_1_naming_the_failed_check(
    lethe: Container, settings: Settings, tmp_path: Path
) -> None:
    job, report = forget(lethe)
    code = job.verification_code
    assert code is not None
    key = tmp_path / "issuer.pem"
    key.write_bytes(pem(lethe))
    good = tmp_path / "certificate.json"
    good.write_bytes(report.document)

    ok = run_lethe(
        settings,
        "verify",
        str(good),
        "--public-key",
        str(key),
        "--subject-id",
        ALICE,
        "--verification-code",
        code,
    )
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "VERIFIED" in ok.stdout and "subject_commitment" in ok.stdout

    from_stdin = run_lethe(
        settings,
        "verify",
        str(good),
        "--public-key",
        str(key),
        "--subject-id",
        "-",
        "--verification-code",
        "-",
        stdin=f"{ALICE}\n{code}\n",
    )
    assert from_stdin.returncode == 0, from_stdin.stdout

    flipped = bytearray(report.document)
    sig_at = report.document.index(json.loads(report.document)["signature"]["value"].encode())
    flipped[sig_at + 5] ^= 0x01
    cases = {
        "signature": bytes(flipped),
        "event:tombstoned": resign(
            edit(report.document, lambda d: step(d, "tombstoned")["evidence"].update(memories_forgotten=0)),
            lethe.reports.signer,
            lethe.audit.origin,
        ),
    }
    for check, data in cases.items():
        bad = tmp_path / "tampered.json"
        bad.write_bytes(data)
        r = run_lethe(settings, "verify", str(bad), "--public-key", str(key))
        assert r.returncode == 1, r.stdout
        assert f"FAILED: {check}" in r.stdout, r.stdout

    wrong = run_lethe(
        settings,
        "verify",
        str(good),
        "--public-key",
        str(key),
        "--subject-id",
        "mallory",
        "--verification-code",
        code,
    )
    assert wrong.returncode == 1 and "FAILED: subject_commitment" in wrong.stdout
    no_code = run_lethe(settings, "verify", str(good), "--public-key", str(key), "--subject-id", ALICE)
    assert no_code.returncode == 1 and "FAILED: subject_commitment" in no_code.stdout

    other = tmp_path / "other.pem"
    other.write_bytes(Ed25519Signer.generate().public_key_pem())
    r = run_lethe(settings, "verify", str(good), "--public-key", str(other), "--json")
    assert r.returncode == 1 and json.loads(r.stdout)["first_failure"] == "signature"


# -- renderings -------------------------------------------------------------------------------------


def test_html_and_pdf_renderings_show_the_report_id_commitment_and_verification_result(
    lethe: Container, settings: Settings, tmp_path: Path
) -> None:
    _, report = forget(lethe, reference="<script>alert('x')</script> & co")
    doc = report.parsed()
    commitment = doc["subject"]["commitment"]

    out = tmp_path / "c.pdf"
    r = run_lethe(settings, "report", "get", report.id, "--format", "pdf", "-o", str(out))
    assert r.returncode == 0, r.stderr
    pdf = PdfReader(io.BytesIO(out.read_bytes()))
    text = "\n".join(page.extract_text() for page in pdf.pages)
    assert report.id in text and commitment in text
    assert "VERIFIED: all" in text and "lethe verify" in text

    page = run_lethe(settings, "report", "get", report.id, "--format", "html")
    assert page.returncode == 0, page.stderr
    html = page.stdout
    assert report.id in html and commitment in html and "VERIFIED: all" in html
    assert "<script>" not in html and "&lt;script&gt;" in html  # escaped, never executed
    assert "http://" not in html and "https://" not in html and "src=" not in html  # self-contained
    assert "lethe verify erasure-certificate-" in html

    raw = run_lethe(settings, "report", "get", report.id)
    assert raw.returncode == 0 and raw.stdout.encode() == report.document  # the signed bytes, verbatim

    tampered = edit(report.document, lambda d: d["request"].update(legal_basis="none"))
    failed = verify_certificate(tampered, pem(lethe))
    assert "FAILED: signature" in render_html(tampered, failed)
    text = "\n".join(p.extract_text() for p in PdfReader(io.BytesIO(render_pdf(tampered, failed))).pages)
    assert "FAILED: signature" in text


def test_the_certificate_signature_is_domain_separated_from_checkpoint_signatures(lethe: Container) -> None:
    _, report = forget(lethe)
    doc = json.loads(report.document)
    unsigned = {k: v for k, v in doc.items() if k != "signature"}
    signature = base64.b64decode(doc["signature"]["value"])
    from lethe.keys.signing import verify_ed25519

    public = lethe.reports.signer.public_key_raw()
    assert verify_ed25519(public, b"lethe-erasure-certificate/v3\n" + canonical_json(unsigned), signature)
    assert not verify_ed25519(public, b"lethe-erasure-certificate/v1\n" + canonical_json(unsigned), signature)
    assert not verify_ed25519(public, canonical_json(unsigned), signature)


def test_a_certificate_over_a_larger_log_embeds_consistency_proofs_and_verifies_fast(
    lethe: Container,
) -> None:
    with lethe.uow.write() as conn:  # 20,000 events of another tenant, appended in bulk
        SqlEventLog().append_many(conn, [Event("test.filler", "t9", {"i": i}) for i in range(20_000)])
    lethe.audit.checkpoint()
    job, report = forget(lethe)
    doc = report.parsed()
    assert doc["consistency_proofs"][0]["tree_size"] >= 20_000  # from the checkpoint signed above
    started = time.perf_counter()
    for _ in range(20):
        assert verify_certificate(
            report.document, pem(lethe), subject_id=ALICE, verification_code=job.verification_code
        ).ok
    assert (time.perf_counter() - started) / 20 < 0.25
