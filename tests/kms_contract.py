"""The contract every ``keys.KeyManager`` backend passes.

Subclass ``KeyManagerContract`` as ``Test<Backend>`` and provide the ``kms`` fixture;
backend-specific evidence (what the KMS itself says) belongs in the subclass.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable

import pytest

from lethe.keys.protocol import (
    DestructionReceipt,
    KeyDestroyed,
    KeyManager,
    UnwrapFailed,
)

NameFactory = Callable[[], str]


def subject_key_name() -> str:
    """A name shaped like Lethe's: ``lethe-<tenant hash>-<subject ref>-g<generation>``."""
    return f"lethe-{secrets.token_hex(4)}-{secrets.token_hex(16)}-g1"


def tamper(wrapped: bytes) -> bytes:
    """Flip one character near the end (inside the authenticated ciphertext)."""
    position = len(wrapped) - 3
    flipped = b"A" if wrapped[position : position + 1] != b"A" else b"B"
    return wrapped[:position] + flipped + wrapped[position + 1 :]


class KeyManagerContract:
    """Generic behaviour of the KMS port, whatever the backend."""

    @pytest.fixture
    def kms(self) -> KeyManager:
        raise NotImplementedError("a backend's test class provides the kms fixture")

    @pytest.fixture
    def new_name(self) -> NameFactory:
        return subject_key_name

    def test_backend_implements_the_key_manager_port(self, kms: KeyManager) -> None:
        assert isinstance(kms, KeyManager)
        assert kms.backend in {"local", "vault"}

    def test_health_passes_while_the_kms_is_up(self, kms: KeyManager) -> None:
        kms.health()

    def test_created_keys_are_not_exportable_and_have_no_plaintext_backup(
        self, kms: KeyManager, new_name: NameFactory
    ) -> None:
        name = new_name()
        info = kms.create_key(name)
        assert info.name == name
        assert info.backend == kms.backend
        assert info.created is True
        assert info.exportable is False
        assert info.plaintext_backup_allowed is False

    def test_creating_an_existing_key_is_idempotent(self, kms: KeyManager, new_name: NameFactory) -> None:
        name = new_name()
        kms.create_key(name)
        wrapped = kms.generate_data_key(name).wrapped
        again = kms.create_key(name)
        assert again.created is False
        assert again.exportable is False
        assert again.plaintext_backup_allowed is False
        kms.unwrap_data_key(name, wrapped)  # the same key, not a replacement

    def test_a_data_key_unwraps_to_the_same_256_bits(self, kms: KeyManager, new_name: NameFactory) -> None:
        name = new_name()
        kms.create_key(name)
        dek = kms.generate_data_key(name)
        assert len(dek.plaintext) == 32
        assert dek.plaintext not in dek.wrapped
        assert kms.unwrap_data_key(name, dek.wrapped) == dek.plaintext

    def test_data_keys_are_fresh_each_time(self, kms: KeyManager, new_name: NameFactory) -> None:
        name = new_name()
        kms.create_key(name)
        first, second = kms.generate_data_key(name), kms.generate_data_key(name)
        assert first.plaintext != second.plaintext
        assert first.wrapped != second.wrapped

    def test_data_key_repr_does_not_show_the_plaintext(self, kms: KeyManager, new_name: NameFactory) -> None:
        name = new_name()
        kms.create_key(name)
        dek = kms.generate_data_key(name)
        assert dek.plaintext.hex() not in repr(dek)
        assert repr(dek.plaintext) not in repr(dek)

    def test_a_wrapped_data_key_only_unwraps_under_its_own_key(
        self, kms: KeyManager, new_name: NameFactory
    ) -> None:
        mine, other = new_name(), new_name()
        kms.create_key(mine)
        kms.create_key(other)
        wrapped = kms.generate_data_key(mine).wrapped
        with pytest.raises(UnwrapFailed):
            kms.unwrap_data_key(other, wrapped)

    def test_a_tampered_wrapped_data_key_fails_as_one_opaque_error(
        self, kms: KeyManager, new_name: NameFactory
    ) -> None:
        name = new_name()
        kms.create_key(name)
        wrapped = kms.generate_data_key(name).wrapped
        for bad in (tamper(wrapped), b"", b"\xff\xfe not ascii", b"garbage"):
            with pytest.raises(UnwrapFailed) as caught:
                kms.unwrap_data_key(name, bad)
            if bad:
                assert bad.decode("latin-1") not in str(caught.value)

    def test_error_messages_carry_no_ciphertext_or_key_material(
        self, kms: KeyManager, new_name: NameFactory
    ) -> None:
        name = new_name()
        kms.create_key(name)
        dek = kms.generate_data_key(name)
        bad = tamper(dek.wrapped)
        with pytest.raises(UnwrapFailed) as caught:
            kms.unwrap_data_key(name, bad)
        message = str(caught.value)
        for secret in (bad.decode("ascii", "replace"), dek.wrapped.decode("ascii", "replace")):
            assert secret not in message
        assert dek.plaintext.hex() not in message

    def test_an_unknown_key_is_reported_destroyed(self, kms: KeyManager, new_name: NameFactory) -> None:
        name, never_created = new_name(), new_name()
        kms.create_key(name)
        wrapped = kms.generate_data_key(name).wrapped
        with pytest.raises(KeyDestroyed):
            kms.unwrap_data_key(never_created, wrapped)
        with pytest.raises(KeyDestroyed):
            kms.generate_data_key(never_created)

    def test_destroyed_key_no_longer_unwraps_its_data_keys(
        self, kms: KeyManager, new_name: NameFactory
    ) -> None:
        name = new_name()
        kms.create_key(name)
        wrapped = [kms.generate_data_key(name).wrapped for _ in range(3)]
        kms.destroy_key(name)
        for each in wrapped:
            with pytest.raises(KeyDestroyed):
                kms.unwrap_data_key(name, each)

    def test_destroyed_key_generates_no_new_data_keys(self, kms: KeyManager, new_name: NameFactory) -> None:
        name = new_name()
        kms.create_key(name)
        kms.destroy_key(name)
        with pytest.raises(KeyDestroyed):
            kms.generate_data_key(name)

    def test_destruction_receipt_states_unusable_and_destroyed_separately(
        self, kms: KeyManager, new_name: NameFactory
    ) -> None:
        name = new_name()
        kms.create_key(name)
        receipt = kms.destroy_key(name)
        assert isinstance(receipt, DestructionReceipt)
        assert receipt.name == name
        assert receipt.backend == kms.backend
        assert receipt.destroyed_at
        assert receipt.already_destroyed is False
        assert receipt.key_unusable is True
        assert receipt.material_destroyed is True
        assert isinstance(receipt.details, dict)

    def test_destroying_twice_reports_already_destroyed(self, kms: KeyManager, new_name: NameFactory) -> None:
        name = new_name()
        kms.create_key(name)
        kms.destroy_key(name)
        second = kms.destroy_key(name)
        assert second.already_destroyed is True
        assert second.key_unusable is True

    def test_a_destroyed_name_is_never_created_again(self, kms: KeyManager, new_name: NameFactory) -> None:
        name = new_name()
        kms.create_key(name)
        kms.destroy_key(name)
        with pytest.raises(KeyDestroyed):
            kms.create_key(name)
        with pytest.raises(KeyDestroyed):
            kms.generate_data_key(name)

    def test_probe_of_a_live_key_does_not_claim_destruction(
        self, kms: KeyManager, new_name: NameFactory
    ) -> None:
        name = new_name()
        kms.create_key(name)
        wrapped = kms.generate_data_key(name).wrapped
        probe = kms.probe(name, wrapped)
        assert probe.unwrap_failed is False
        assert probe.key_present is True
        assert probe.destroyed is False

    def test_probe_after_destruction_proves_the_key_gone(
        self, kms: KeyManager, new_name: NameFactory
    ) -> None:
        name = new_name()
        kms.create_key(name)
        wrapped = kms.generate_data_key(name).wrapped
        kms.destroy_key(name)
        probe = kms.probe(name, wrapped)
        assert probe.name == name
        assert probe.backend == kms.backend
        assert probe.unwrap_failed is True
        assert probe.key_present is False
        assert probe.destroyed is True

    def test_destroying_one_key_leaves_the_others_usable(
        self, kms: KeyManager, new_name: NameFactory
    ) -> None:
        doomed, kept = new_name(), new_name()
        kms.create_key(doomed)
        kms.create_key(kept)
        dek = kms.generate_data_key(kept)
        kms.destroy_key(doomed)
        assert kms.unwrap_data_key(kept, dek.wrapped) == dek.plaintext
