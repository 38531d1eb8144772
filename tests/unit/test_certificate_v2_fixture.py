"""A v2 certificate issued before v3 existed still verifies, exactly as it did.

``tests/fixtures/certificate_v2.json`` (with its issuer key and verification code) was
issued by Lethe's v2 issuer (main at b16bec6) and saved byte for byte: the v3 verifier
must pass all its checks, run no v3-only check on it, and fail it when a byte changes.
"""

from __future__ import annotations

import json
from pathlib import Path

from lethe.vault.audit.verify import verify_certificate

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CERT = (FIXTURES / "certificate_v2.json").read_bytes()
PEM = (FIXTURES / "certificate_v2.pem").read_bytes()
CODE = (FIXTURES / "certificate_v2.code").read_text().strip()
SUBJECT = "alice@example.com"


def test_the_saved_v2_certificate_still_verifies_with_its_subject_and_code() -> None:
    assert json.loads(CERT)["format"] == "lethe-erasure-certificate/v2"
    result = verify_certificate(CERT, PEM, subject_id=SUBJECT, verification_code=CODE, tenant="t1")
    assert result.ok, result.summary()
    names = [c.name for c in result.checks]
    assert "result" not in names and "subject_commitment" in names


def test_the_saved_v2_certificate_fails_when_one_byte_changes() -> None:
    at = CERT.index(b'"reference":"DSR-v2-fixture"') + len(b'"reference":"DSR-v2-')
    changed = CERT[:at] + b"g" + CERT[at + 1 :]
    assert "signature" in verify_certificate(changed, PEM).failed
    assert not verify_certificate(CERT.replace(b"t1", b"t2", 1), PEM).ok
