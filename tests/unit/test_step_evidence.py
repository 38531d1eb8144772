"""Each step's evidence passes through its typed record unchanged, and the verifier turns a
record that cannot be read into a failed check, never an exception.

The saved v2 certificate (``tests/fixtures/certificate_v2.json``, issued before the records
existed) is the evidence of record: every step's evidence must come back byte for byte.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lethe.vault.audit.step_evidence import (
    RECORDS,
    EvidenceMalformed,
    KeyDestroyedEvidence,
    ReportedEvidence,
    TombstonedEvidence,
)
from lethe.vault.audit.step_names import Step
from lethe.vault.audit.verify import verify_certificate
from lethe.vault.canonical import canonical_json

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CERT = (FIXTURES / "certificate_v2.json").read_bytes()
PEM = (FIXTURES / "certificate_v2.pem").read_bytes()


def _with_evidence(step: str, key: str, value: Any) -> bytes:
    doc = json.loads(CERT)
    next(s for s in doc["steps"] if s["name"] == step)["evidence"][key] = value
    return canonical_json(doc)


def test_every_step_of_an_old_certificate_comes_back_byte_for_byte_through_its_record() -> None:
    steps = json.loads(CERT)["steps"]
    assert len(steps) == 6
    for step in steps:
        record = RECORDS[Step(step["name"])].from_dict(step["evidence"])
        assert canonical_json(record.to_dict()) == canonical_json(step["evidence"]), step["name"]


def test_a_field_the_record_does_not_know_is_kept_and_written_back() -> None:
    record = TombstonedEvidence.from_dict({"memories_forgotten": 2, "found_later": {"x": [1]}})
    assert record.memories_forgotten == 2 and record.extra == {"found_later": {"x": [1]}}
    assert record.to_dict() == {"memories_forgotten": 2, "found_later": {"x": [1]}}


@pytest.mark.parametrize(
    ("evidence", "says"),
    [
        ({"memories_forgotten": True}, "memories_forgotten has the wrong type"),
        ({"key_generation": "1"}, "key_generation has the wrong type"),
        ([], "is not an object"),
    ],
)
def test_a_record_names_the_field_it_cannot_read(evidence: Any, says: str) -> None:
    with pytest.raises(EvidenceMalformed, match=says):
        TombstonedEvidence.from_dict(evidence)


def test_a_required_field_is_required_and_a_receipt_must_be_an_object() -> None:
    with pytest.raises(EvidenceMalformed, match="no checkpoint_tree_size"):
        ReportedEvidence.from_dict({"report_id": "r", "certificate_sha256": "00"})
    with pytest.raises(EvidenceMalformed, match="receipts has the wrong type"):
        KeyDestroyedEvidence.from_dict({"receipts": ["not an object"]})


def test_the_verifier_fails_the_evidence_check_on_a_receipt_it_cannot_read_and_does_not_raise() -> None:
    result = verify_certificate(_with_evidence("key_destroyed", "receipts", [7]), PEM)
    failed = {c.name: c.detail for c in result.checks if not c.ok}
    assert failed["evidence"] == "key_destroyed: the evidence's receipts has the wrong type"


def test_a_boolean_where_a_count_belongs_fails_the_evidence_check() -> None:
    """``False == 0`` in Python: the record's types stop a certificate saying "false" entries
    remained from passing as "0" (the browser verifier, comparing with ``!== 0``, fails it too)."""
    result = verify_certificate(_with_evidence("tombstoned", "index_entries_after", False), PEM)
    failed = {c.name: c.detail for c in result.checks if not c.ok}
    assert "index_entries_after has the wrong type" in failed["evidence"]
