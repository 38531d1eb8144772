"""Validation of a write before anything is encrypted or stored: each rule, its own error."""

from __future__ import annotations

import math
import unicodedata
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from lethe.vault import errors
from lethe.vault.memory.validation import (
    MAX_VERSION,
    normal_subject_id,
    require_text,
    require_version,
    validate_write,
)
from lethe.vault.model import Kind, Provenance, SourceType, WriteCommand
from lethe.vault.policy import DEFAULT_TTLS, Limits

NOW = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
LIMITS = Limits()


def cmd(**kw) -> WriteCommand:
    fields = {
        "subject_id": "alice",
        "purpose": "support",
        "kind": "preference",
        "content": "prefers tea",
        "provenance": Provenance(SourceType.USER_STATEMENT, "session-1/turn-1"),
        "idempotency_key": "k-1",
        "confidence": 0.9,
    }
    return WriteCommand(**{**fields, **kw})


def test_a_good_write_gets_its_kind_source_and_the_kinds_default_expiry():
    valid = validate_write(cmd(), LIMITS, NOW)
    assert valid.kind is Kind.PREFERENCE and valid.source_type is SourceType.USER_STATEMENT
    assert valid.expires_at == NOW + DEFAULT_TTLS[Kind.PREFERENCE][0]


@pytest.mark.parametrize(
    "change, error, words",
    [
        ({"kind": "gossip"}, errors.UnknownKind, "unknown kind"),
        ({"provenance": None}, errors.MissingProvenance, "provenance"),
        ({"provenance": Provenance(SourceType.TOOL_RESULT, "  ")}, errors.MissingProvenance, "source_ref"),
        ({"provenance": Provenance("rumour", "x")}, errors.MissingProvenance, "source_type"),  # type: ignore[arg-type]
        ({"provenance": Provenance(SourceType.SUMMARY, "s")}, errors.MissingProvenance, "summary"),
        ({"purpose": "Support!"}, errors.InvalidPurpose, "purpose"),
        ({"purpose": "x" * 65}, errors.InvalidPurpose, "purpose"),
        ({"confidence": 1.5}, errors.InvalidConfidence, "confidence"),
        ({"confidence": math.nan}, errors.InvalidConfidence, "confidence"),
        ({"confidence": True}, errors.InvalidConfidence, "confidence"),
        ({"confidence": 10**400}, errors.InvalidConfidence, "confidence"),
        ({"content": "x" * (16 * 1024 + 1)}, errors.ContentTooLarge, "limit"),
        ({"content": ""}, errors.InvalidCommand, "content"),
        ({"subject_id": "  "}, errors.InvalidCommand, "subject_id"),
        ({"idempotency_key": "k" * 129}, errors.InvalidCommand, "idempotency_key"),
        ({"content": "tea\x00"}, errors.InvalidCommand, "NUL"),
        ({"expected_version": -1}, errors.InvalidCommand, "expected_version"),
        ({"expected_version": MAX_VERSION + 1}, errors.InvalidCommand, "expected_version"),
        ({"ttl_seconds": 0}, errors.InvalidTtl, "positive"),
        ({"ttl_seconds": math.nan}, errors.InvalidTtl, "number"),
        ({"ttl_seconds": 10**30}, errors.InvalidTtl, "maximum"),
        ({"expires_at": NOW - timedelta(seconds=1)}, errors.InvalidTtl, "past"),
        ({"expires_at": datetime(2026, 2, 1)}, errors.InvalidTtl, "time zone"),
        ({"expires_at": NOW + timedelta(days=1), "ttl_seconds": 60}, errors.InvalidTtl, "not both"),
        ({"kind": "working_note", "ttl_seconds": 8 * 86400}, errors.InvalidTtl, "working_note"),
    ],
)
def test_each_rule_has_its_own_error_naming_the_field_never_the_content(change, error, words):
    with pytest.raises(error, match=words) as caught:
        validate_write(cmd(**change), LIMITS, NOW)
    assert "prefers tea" not in str(caught.value)


def test_a_summary_names_its_sources():
    summary = cmd(provenance=Provenance(SourceType.SUMMARY, "job-7", ("m-1", "m-2")))
    assert validate_write(summary, LIMITS, NOW).source_type is SourceType.SUMMARY


def test_an_expiry_is_taken_from_ttl_seconds_or_expires_at():
    assert validate_write(cmd(ttl_seconds=60), LIMITS, NOW).expires_at == NOW + timedelta(seconds=60)
    at = NOW + timedelta(days=2)
    assert validate_write(cmd(expires_at=at), LIMITS, NOW).expires_at == at


def test_the_maximum_ttl_is_inclusive_and_configurable():
    _, maximum = DEFAULT_TTLS[Kind.WORKING_NOTE]
    note = cmd(kind="working_note", ttl_seconds=int(maximum.total_seconds()))
    assert validate_write(note, LIMITS, NOW).expires_at == NOW + maximum
    tight = Limits(ttls={k: (timedelta(hours=1), timedelta(hours=1)) for k in Kind})
    with pytest.raises(errors.InvalidTtl):
        validate_write(replace(note, ttl_seconds=7200), tight, NOW)


def test_the_content_limit_counts_bytes_not_characters():
    limits = Limits(max_content_bytes=8)
    validate_write(cmd(content="é" * 4), limits, NOW)  # 8 bytes
    with pytest.raises(errors.ContentTooLarge):
        validate_write(cmd(content="é" * 5), limits, NOW)


def test_subject_ids_are_nfc_and_keep_their_case():
    decomposed = "Jose\u0301"
    assert normal_subject_id(decomposed) == unicodedata.normalize("NFC", decomposed) == "José"
    assert normal_subject_id("Alice") != normal_subject_id("alice")
    with pytest.raises(errors.InvalidCommand, match="at most 256"):
        normal_subject_id("a" * 257)


@pytest.mark.parametrize("value", [None, "", "   ", 7, "a\x00b", "x" * 11])
def test_require_text_refuses_what_a_store_cannot_hold(value):
    with pytest.raises(errors.InvalidCommand):
        require_text("field", value, 10)


def test_require_text_allows_an_absent_optional_field():
    require_text("reference", None, 10, required=False)


@pytest.mark.parametrize("value", [0, 1, MAX_VERSION])
def test_versions_fit_a_32_bit_column(value):
    require_version("v", value)


@pytest.mark.parametrize("value", [-1, MAX_VERSION + 1, True, 1.0, "1"])
def test_anything_else_is_not_a_version(value):
    with pytest.raises(errors.InvalidCommand):
        require_version("v", value)
