"""A certificate confirms whom it is about only to whoever holds the request's verification code.

The code is handed out once when the request is filed (the 202 answer, ``lethe forget``)
and never stored: the commitment is an HMAC keyed by it. Over real SQLite and PostgreSQL,
with the local KMS and a real OpenBao server (the ``shredder`` fixture).
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from lethe.api.bootstrap import Container
from lethe.api.settings import Settings
from lethe.vault.audit.certificate_format import (
    FORMAT_V1,
    SALTED_SCHEME,
    compute_subject_commitment,
    new_verification_code,
)
from lethe.vault.audit.verify import verify_certificate
from lethe.vault.canonical import canonical_json
from lethe.vault.oversight.certificate import sign_certificate
from lethe.vault.store.tables import erasure_jobs, metadata
from tests.conftest import agent, officer, write_cmd
from tests.integration.test_certificate import run_lethe

ALICE = "alice@example.com"


def forget(c: Container, subject: str = ALICE) -> tuple[str, bytes]:
    c.memories.write(agent(), write_cmd("alice likes tea", subject=subject))
    filed = c.erasure.request(officer(), subject, "gdpr-art17-1a", "DSR-1")
    assert filed.verification_code is not None
    c.erasure.run_pending()
    job = c.erasure.get(officer(), filed.id)
    assert job.report_id is not None, job.last_error
    return filed.verification_code, c.reports.load(job.report_id).document


def candidates(right: str) -> list[str]:
    rng = random.Random(13)
    ids = [f"user{rng.randrange(10**9)}@example.com" for _ in range(999)] + [right]
    rng.shuffle(ids)
    return ids


def test_with_a_thousand_candidate_ids_only_the_verification_code_identifies_the_subject(
    shredder: Container,
) -> None:
    code, cert = forget(shredder)
    key = shredder.audit.public_key().pem.encode()
    ids = candidates(ALICE)

    # Without the code every candidate gets the same answer: nothing singles one out.
    answers = set()
    for candidate in ids:
        result = verify_certificate(cert, key, subject_id=candidate)
        assert result.failed == ["subject_commitment"], candidate
        answers.add(result.first_failure.detail if result.first_failure else "")
    assert len(answers) == 1
    # Nor do the certificate's own bytes: no salt, no unkeyed hash, no id in clear.
    doc = json.loads(cert)
    assert "salt" not in doc["subject"] and ALICE not in cert.decode() and code not in cert.decode()
    # A code of another request (or a guessed one) identifies nobody either.
    for wrong_code in (forget(shredder, "bob@example.com")[0], new_verification_code()):
        assert not any(
            verify_certificate(cert, key, subject_id=i, verification_code=wrong_code).ok for i in ids
        )
    # With the code, exactly the right id verifies, whichever way the code is typed.
    matches = [i for i in ids if verify_certificate(cert, key, subject_id=i, verification_code=code).ok]
    assert matches == [ALICE]
    assert verify_certificate(cert, key, subject_id=ALICE, verification_code=code.lower().replace("-", "")).ok


def test_the_verification_code_is_stored_nowhere(shredder: Container) -> None:
    code, _ = forget(shredder)
    bare = code.replace("-", "")
    with shredder.uow.maintenance("test: inspect every tenant's rows"), shredder.uow.read() as conn:
        for table in metadata.sorted_tables:
            for row in conn.execute(sa.select(table)).all():
                text = " ".join(str(v) for v in row)
                assert code not in text and bare not in text, table.name


def test_a_v1_certificate_and_a_v2_one_of_a_request_filed_before_codes_still_verify(lethe: Container) -> None:
    """Requests filed by an earlier release carry a salted commitment; their certificates verify."""
    lethe.memories.write(agent(), write_cmd("alice likes tea"))
    filed = lethe.erasure.request(officer(), ALICE, "gdpr-art17-1a", "DSR-1")
    salt = "ab" * 16
    with (
        lethe.uow.maintenance("test: alter rows as their owner"),
        lethe.uow.write() as conn,
    ):  # as the earlier release filed it
        conn.execute(
            erasure_jobs.update()
            .where(erasure_jobs.c.id == filed.id)
            .values(commitment_salt=salt, subject_commitment=compute_subject_commitment(salt, "t1", ALICE))
        )
    lethe.erasure.run_pending()
    job = lethe.erasure.get(officer(), filed.id)
    v2 = lethe.reports.load(job.report_id or "").document
    key = lethe.audit.public_key().pem.encode()
    assert json.loads(v2)["subject"]["commitment_scheme"] == SALTED_SCHEME
    assert verify_certificate(v2, key, subject_id=ALICE).ok
    assert verify_certificate(v2, key, subject_id="mallory").failed == ["subject_commitment"]

    # The same facts as the v1 issuer signed them: v1 format, v1 signature domain.
    def as_v1(d: dict[str, Any]) -> dict[str, Any]:
        subject = {k: d["subject"][k] for k in ("commitment", "salt", "scheme")}
        subject["subject_ref"] = d["subject"]["request_subject_ref"]  # v1 names the ref its events carry
        verification = {**d["verification"], "signature_domain": "lethe-erasure-certificate/v1\\n"}
        return {**d, "format": FORMAT_V1, "subject": subject, "verification": verification}

    v1 = sign_certificate(as_v1(json.loads(v2)), lethe.reports.signer, lethe.audit.origin)
    assert verify_certificate(v1, key, subject_id=ALICE, tenant="t1").ok
    assert verify_certificate(v1, key, subject_id="mallory").failed == ["subject_commitment"]
    # A v1 signature does not pass as v2 (domain separation between the versions).
    relabelled = canonical_json({**json.loads(v1), "format": "lethe-erasure-certificate/v2"})
    assert "signature" in verify_certificate(relabelled, key).failed


def test_a_keyed_certificate_with_a_salt_slipped_in_is_refused(lethe: Container) -> None:
    code, cert = forget(lethe)
    doc = json.loads(cert)
    doc["subject"]["salt"] = "00" * 16
    resigned = sign_certificate(doc, lethe.reports.signer, lethe.audit.origin)
    key = lethe.audit.public_key().pem.encode()
    assert "format" in verify_certificate(resigned, key).failed
    assert verify_certificate(cert, key, subject_id=ALICE, verification_code=code).ok


def test_lethe_forget_shows_the_code_once_and_lethe_verify_needs_it(
    lethe: Container, settings: Settings, tmp_path: Path
) -> None:
    lethe.memories.write(agent(), write_cmd("alice likes tea"))
    filed = run_lethe(
        settings, "forget", "--tenant", "t1", "--subject", ALICE, "--basis", "gdpr-art17-1a", "--json"
    )
    assert filed.returncode == 0, filed.stdout + filed.stderr
    out = json.loads(filed.stdout)
    code = out["verification_code"]
    assert out["report_id"] and code
    text = run_lethe(settings, "forget", "--tenant", "t1", "--subject", "bob@x", "--basis", "gdpr-art17-1a")
    assert text.returncode == 0 and "verification code:" in text.stdout
    shown = run_lethe(settings, "erasure", "show", out["id"], "--tenant", "t1", "--json")
    assert shown.returncode == 0 and code not in shown.stdout

    cert, key = tmp_path / "cert.json", tmp_path / "key.pem"
    cert.write_bytes(lethe.reports.load(out["report_id"]).document)
    key.write_bytes(lethe.audit.public_key().pem.encode())
    base = ("verify", str(cert), "--public-key", str(key), "--subject-id", ALICE)
    assert run_lethe(settings, *base, "--verification-code", code).returncode == 0
    wrong = run_lethe(
        settings,
        "verify",
        str(cert),
        "--public-key",
        str(key),
        "--subject-id",
        "eve@x",
        "--verification-code",
        code,
    )
    assert wrong.returncode == 1 and "FAILED: subject_commitment" in wrong.stdout
    assert run_lethe(settings, *base).returncode == 1  # the id alone confirms nothing
    assert run_lethe(settings, "verify", str(cert), "--public-key", str(key)).returncode == 0
