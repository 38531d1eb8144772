"""Pure parts of the audit log and the certificate verifier, without a database."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import SecretStr

from lethe.api.settings import Settings
from lethe.api.signing_key import ensure_signing_key, load_signer, log_origin
from lethe.keys.signing import Ed25519Signer, SigningKeyError
from lethe.vault.audit.leaves import RootAccumulator, fast_canonical_row, row_matches
from lethe.vault.audit.step_names import Step
from lethe.vault.audit.verify import CORE_STEP_ORDER, compute_subject_commitment, verify_certificate
from lethe.vault.canonical import canonical_json
from lethe.vault.erasure.model import subject_commitment
from lethe.vault.erasure.pipeline import core_steps
from lethe.vault.merkle import MerkleTree, leaf_hash
from lethe.vault.store.events import canonical_row

text = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53) + 1, 2**53 - 1) | text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=8,
)


def row(**kw: object) -> SimpleNamespace:
    fields = {
        "seq": 7,
        "event_id": "e-1",
        "type": "memory.written",
        "tenant_id": "t1",
        "memory_id": None,
        "subject_ref": "ab" * 32,
        "occurred_at": "2026-01-01T00:00:00.000000Z",
        "payload": canonical_json({"a": 1}).decode(),
        "ciphertext_digest": None,
    }
    fields.update(kw)
    r = SimpleNamespace(**fields)
    r.leaf_hash = leaf_hash(canonical_row(r))
    return r


@settings(max_examples=300, deadline=None)
@given(
    seq=st.integers(1, 2**53 - 1),
    strings=st.lists(st.one_of(st.none(), text), min_size=5, max_size=5),
    event_type=text,
    payload=st.dictionaries(text, json_values, max_size=4),
)
def test_the_fast_leaf_path_produces_exactly_the_canonical_event(seq, strings, event_type, payload) -> None:
    r = row(
        seq=seq,
        event_id=strings[0] or "x",
        memory_id=strings[1],
        subject_ref=strings[2],
        occurred_at=strings[3] or "t",
        ciphertext_digest=strings[4],
        type=event_type,
        payload=canonical_json(payload).decode(),
    )
    assert fast_canonical_row(r) == canonical_row(r)
    assert row_matches(r)


def test_a_non_canonical_payload_still_matches_by_the_slow_path_and_an_edit_never_does() -> None:
    r = row(payload=canonical_json({"b": [1, 2], "a": "x"}).decode())
    spaced = SimpleNamespace(**{**vars(r), "payload": '{ "b": [1, 2], "a": "x" }'})
    assert fast_canonical_row(spaced) != canonical_row(spaced)
    assert row_matches(spaced)  # same event, stored with other whitespace
    assert not row_matches(SimpleNamespace(**{**vars(r), "payload": '{"a":"y","b":[1,2]}'}))
    assert not row_matches(SimpleNamespace(**{**vars(r), "seq": 8}))
    assert not row_matches(SimpleNamespace(**{**vars(r), "payload": "not json"}))
    # A payload that smuggles other members in is not a JSON object, so no fast match.
    smuggled = SimpleNamespace(**{**vars(r), "payload": '{"a":"x"},"seq":7,"x":{"b":[1,2]}'})
    assert not row_matches(smuggled)


class FakeLeafSource:
    def __init__(self, leaves: list[bytes]) -> None:
        self.leaves = leaves

    def size(self) -> int:
        return len(self.leaves)

    def leaf_hashes(self, start: int, end: int) -> list[bytes]:
        return self.leaves[start:end]


def test_the_one_pass_root_accumulator_agrees_with_the_merkle_tree_at_every_size() -> None:
    leaves = [leaf_hash(str(i).encode()) for i in range(300)]
    tree = MerkleTree(FakeLeafSource(leaves), chunk=4)
    acc = RootAccumulator()
    assert acc.root() == tree.root(0)
    for n, leaf in enumerate(leaves, start=1):
        acc.add(leaf)
        assert acc.root() == tree.root(n), n


def test_the_verifier_knows_the_same_core_steps_and_commitment_as_the_workflow() -> None:
    assert (Step.RECEIVED, *(s.name for s in core_steps() if s.applies is None)) == CORE_STEP_ORDER
    salt = os.urandom(16)
    assert compute_subject_commitment(salt.hex(), "t1", "alice") == subject_commitment(salt, "t1", "alice")


KEY = Ed25519Signer.generate().public_key_pem()


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.binary(max_size=200), json_values.map(lambda v: json.dumps(v).encode())))
def test_the_verifier_fails_closed_and_never_raises_on_garbage(data: bytes) -> None:
    result = verify_certificate(data, KEY, subject_id="x", tenant="t", older_checkpoint=data)
    assert not result.ok and result.first_failure is not None


def test_the_verifier_fails_closed_on_a_structurally_wrong_document() -> None:
    doc = {"format": "lethe-erasure-certificate/v1", "steps": [1, {"name": 3}], "signature": []}
    result = verify_certificate(canonical_json(doc), KEY)
    assert not result.ok
    assert {"format", "signature", "step_order"} <= set(result.failed)
    assert verify_certificate(canonical_json(doc), b"not a key").first_failure is not None


# -- the signing key on disk ----------------------------------------------------------------


def test_init_creates_an_encrypted_0600_signing_key_its_passphrase_and_a_stable_origin(
    tmp_path: Path,
) -> None:
    s = Settings(data_dir=tmp_path / "d")
    created = ensure_signing_key(s)
    assert any("signing.pem" in line for line in created)
    pem = s.key_dir / "signing.pem"
    passphrase = s.key_dir / "signing.passphrase"
    assert b"ENCRYPTED PRIVATE KEY" in pem.read_bytes()
    assert stat.S_IMODE(pem.stat().st_mode) == 0o600
    assert stat.S_IMODE(passphrase.stat().st_mode) == 0o600
    origin = log_origin(s)
    assert origin.startswith("lethe.local/")
    signer = load_signer(s)
    assert ensure_signing_key(s) == []  # idempotent
    assert load_signer(s).public_key_raw() == signer.public_key_raw() and log_origin(s) == origin
    assert (s.key_dir / "signing.pub.pem").read_bytes() == signer.public_key_pem()


def test_a_passphrase_from_the_environment_writes_no_passphrase_file_and_is_required(tmp_path: Path) -> None:
    s = Settings(data_dir=tmp_path / "d", signing_key_passphrase=SecretStr("correct horse"))
    ensure_signing_key(s)
    assert not (s.key_dir / "signing.passphrase").exists()
    load_signer(s)
    with pytest.raises(SigningKeyError):
        load_signer(Settings(data_dir=tmp_path / "d"))  # no passphrase anywhere
    with pytest.raises(SigningKeyError):
        load_signer(Settings(data_dir=tmp_path / "d", signing_key_passphrase=SecretStr("wrong")))


def test_the_origin_can_be_set_but_must_be_a_valid_note_key_name(tmp_path: Path) -> None:
    s = Settings(data_dir=tmp_path / "d", log_origin="example.com/lethe")
    ensure_signing_key(s)
    assert log_origin(s) == "example.com/lethe"
    with pytest.raises(ValueError, match="not a valid"):
        log_origin(Settings(data_dir=tmp_path / "d", log_origin="has space"))
    with pytest.raises(ValueError, match="not a valid"):
        log_origin(Settings(data_dir=tmp_path / "d", log_origin="a+b"))
