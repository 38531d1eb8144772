"""``VaultTransitKms`` against a real OpenBao dev server.

The contract suite runs with a token holding only ``keys/vault_policy.hcl``, so it
also proves that policy sufficient; the OpenBao-specific checks ask the server itself
(with the root token) what happened.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator
from pathlib import Path

import hvac
import pytest
from hvac import exceptions as hvac_exc

from lethe.keys.protocol import KeyDestroyed, KmsForbidden, KmsUnavailable
from lethe.keys.vault_transit import TOMBSTONE_SUFFIX, VaultTransitKms
from tests.kms_contract import KeyManagerContract, subject_key_name
from tests.openbao import OpenBaoDevServer, free_port_pair

pytestmark = pytest.mark.openbao

POLICY_FILE = Path(__file__).resolve().parents[2] / "src" / "lethe" / "keys" / "vault_policy.hcl"
POLICY_NAME = "lethe-kms"


def token_with_policies(root: hvac.Client, *policies: str) -> str:
    """A child token holding exactly ``policies`` (not even ``default``)."""
    created = root.auth.token.create(policies=list(policies), no_default_policy=True, ttl="1h")
    return created["auth"]["client_token"]


@pytest.fixture(scope="module")
def root(openbao: OpenBaoDevServer) -> Iterator[hvac.Client]:
    client = openbao.client()
    yield client
    client.adapter.close()


@pytest.fixture(scope="module")
def policy_token(root: hvac.Client) -> str:
    root.sys.create_or_update_policy(POLICY_NAME, POLICY_FILE.read_text())
    return token_with_policies(root, POLICY_NAME)


def make_kms(server: OpenBaoDevServer, token: str, **kwargs: object) -> VaultTransitKms:
    return VaultTransitKms(server.addr, token, **kwargs)  # type: ignore[arg-type]


class TestVaultTransitKms(KeyManagerContract):
    @pytest.fixture
    def kms(self, openbao: OpenBaoDevServer, policy_token: str) -> Iterator[VaultTransitKms]:
        kms = make_kms(openbao, policy_token, mount="transit", timeout=5.0)
        yield kms
        kms.close()

    # -- what OpenBao itself says -------------------------------------------------

    def test_openbao_holds_created_keys_as_non_exportable_without_plaintext_backup(
        self, kms: VaultTransitKms, root: hvac.Client
    ) -> None:
        name = subject_key_name()
        kms.create_key(name)
        data = root.secrets.transit.read_key(name)["data"]
        assert data["type"] == "aes256-gcm96"
        assert data["exportable"] is False
        assert data["allow_plaintext_backup"] is False
        assert data["deletion_allowed"] is False
        with pytest.raises(hvac_exc.VaultError):  # even root cannot take the key out
            root.secrets.transit.export_key(name, key_type="encryption-key")
        with pytest.raises(hvac_exc.VaultError):
            root.secrets.transit.backup_key(name)

    def test_existing_key_flags_are_reported_as_openbao_holds_them(
        self, kms: VaultTransitKms, root: hvac.Client
    ) -> None:
        name = subject_key_name()
        root.secrets.transit.create_key(name, exportable=True)  # made outside Lethe
        info = kms.create_key(name)
        assert info.created is False
        assert info.exportable is True

    def test_wrapped_data_key_is_a_transit_ciphertext(self, kms: VaultTransitKms) -> None:
        name = subject_key_name()
        kms.create_key(name)
        assert kms.generate_data_key(name).wrapped.startswith(b"vault:v1:")

    def test_destroyed_key_cannot_be_restored(self, kms: VaultTransitKms, root: hvac.Client) -> None:
        name = subject_key_name()
        kms.create_key(name)
        wrapped = kms.generate_data_key(name).wrapped
        receipt = kms.destroy_key(name)
        assert receipt.details["soft_delete_used"] is False
        assert receipt.details["exportable_at_destruction"] is False
        assert receipt.details["plaintext_backup_allowed_at_destruction"] is False
        # OpenBao's soft-delete undo finds nothing to restore: the key ring is gone.
        root.adapter.post(f"/v1/transit/keys/{name}/soft-delete-restore")
        with pytest.raises(hvac_exc.InvalidPath):
            root.secrets.transit.read_key(name)
        with pytest.raises(hvac_exc.VaultError):
            root.secrets.transit.backup_key(name)
        assert name not in root.secrets.transit.list_keys()["data"]["keys"]
        with pytest.raises(hvac_exc.InvalidRequest, match="encryption key not found"):
            root.secrets.transit.decrypt_data(name, ciphertext=wrapped.decode())
        assert kms.probe(name, wrapped).destroyed

    def test_destroy_purges_a_key_an_operator_soft_deleted(
        self, kms: VaultTransitKms, root: hvac.Client
    ) -> None:
        name = subject_key_name()
        kms.create_key(name)
        wrapped = kms.generate_data_key(name).wrapped
        root.adapter.delete(f"/v1/transit/keys/{name}/soft-delete")
        with pytest.raises(KeyDestroyed):  # unusable ...
            kms.unwrap_data_key(name, wrapped)
        probe = kms.probe(name, wrapped)
        assert probe.unwrap_failed and probe.key_present  # ... but not destroyed
        assert probe.destroyed is False
        receipt = kms.destroy_key(name)
        assert receipt.details["soft_deleted_before"] is True
        assert receipt.material_destroyed is True
        with pytest.raises(hvac_exc.InvalidPath):
            root.secrets.transit.read_key(name)

    def test_a_key_outside_lethe_that_was_exportable_is_not_claimed_destroyed(
        self, kms: VaultTransitKms, root: hvac.Client
    ) -> None:
        name = subject_key_name()
        root.secrets.transit.create_key(name, exportable=True)
        receipt = kms.destroy_key(name)
        assert receipt.key_unusable is True
        assert receipt.material_destroyed is False  # an export may exist elsewhere

    def test_destroying_a_never_created_name_retires_it(self, kms: VaultTransitKms) -> None:
        name = subject_key_name()
        receipt = kms.destroy_key(name)
        assert receipt.already_destroyed is True
        assert receipt.details["key_found"] is False
        with pytest.raises(KeyDestroyed):
            kms.create_key(name)

    def test_tombstone_names_are_reserved(self, kms: VaultTransitKms) -> None:
        with pytest.raises(ValueError):
            kms.create_key(subject_key_name() + TOMBSTONE_SUFFIX)
        with pytest.raises(ValueError):
            kms.create_key("not a/transit name")

    # -- failures at the edge -----------------------------------------------------

    def test_paused_server_gives_kms_unavailable_within_the_timeout(
        self, openbao: OpenBaoDevServer, policy_token: str
    ) -> None:
        kms = make_kms(openbao, policy_token, timeout=1.0)
        name = subject_key_name()
        kms.create_key(name)
        dek = kms.generate_data_key(name)
        openbao.pause()
        try:
            for call in (
                kms.health,
                lambda: kms.generate_data_key(name),
                lambda: kms.unwrap_data_key(name, dek.wrapped),
                lambda: kms.probe(name, dek.wrapped),
                lambda: kms.destroy_key(name),
            ):
                started = time.monotonic()
                with pytest.raises(KmsUnavailable):
                    call()
                assert time.monotonic() - started < 2.5
        finally:
            openbao.resume()
        kms.health()
        assert kms.unwrap_data_key(name, dek.wrapped) == dek.plaintext
        assert kms.probe(name, dek.wrapped).destroyed is False
        kms.close()

    def test_sealed_server_is_unavailable_and_recovers_when_unsealed(
        self, openbao: OpenBaoDevServer, root: hvac.Client, kms: VaultTransitKms
    ) -> None:
        name = subject_key_name()
        kms.create_key(name)
        dek = kms.generate_data_key(name)
        unseal_key = openbao.unseal_key
        root.sys.seal()
        try:
            with pytest.raises(KmsUnavailable):
                kms.health()
            with pytest.raises(KmsUnavailable):
                kms.unwrap_data_key(name, dek.wrapped)
            with pytest.raises(KmsUnavailable):
                kms.probe(name, dek.wrapped)
        finally:
            root.sys.submit_unseal_key(unseal_key)
        kms.health()
        assert kms.unwrap_data_key(name, dek.wrapped) == dek.plaintext

    def test_unreachable_server_gives_kms_unavailable(self) -> None:
        kms = VaultTransitKms(f"http://127.0.0.1:{free_port_pair()}", "t", timeout=1.0)
        for call in (kms.health, lambda: kms.create_key(subject_key_name())):
            with pytest.raises(KmsUnavailable):
                call()

    def test_token_without_permissions_gives_kms_forbidden(
        self, openbao: OpenBaoDevServer, root: hvac.Client, kms: VaultTransitKms
    ) -> None:
        root.sys.create_or_update_policy("nothing", 'path "sys/nothing" { capabilities = ["read"] }')
        weak = make_kms(openbao, token_with_policies(root, "nothing"))
        name = subject_key_name()
        kms.create_key(name)
        wrapped = kms.generate_data_key(name).wrapped
        for call in (
            weak.health,
            lambda: weak.create_key(subject_key_name()),
            lambda: weak.generate_data_key(name),
            lambda: weak.unwrap_data_key(name, wrapped),
            lambda: weak.probe(name, wrapped),
            lambda: weak.destroy_key(name),
        ):
            with pytest.raises(KmsForbidden):
                call()
        assert kms.probe(name, wrapped).destroyed is False  # nothing was destroyed
        weak.close()

    def test_invalid_token_gives_kms_forbidden(self, openbao: OpenBaoDevServer) -> None:
        weak = make_kms(openbao, secrets.token_hex(12))
        with pytest.raises(KmsForbidden):
            weak.health()
        with pytest.raises(KmsForbidden):
            weak.generate_data_key(subject_key_name())

    def test_missing_mount_is_unavailable_never_proof_of_destruction(
        self, openbao: OpenBaoDevServer, kms: VaultTransitKms
    ) -> None:
        name = subject_key_name()
        kms.create_key(name)
        wrapped = kms.generate_data_key(name).wrapped
        wrong_mount = make_kms(openbao, openbao.token, mount="no-such-transit")
        with pytest.raises(KmsUnavailable):
            wrong_mount.probe(name, wrapped)
        with pytest.raises(KmsUnavailable):
            wrong_mount.destroy_key(name)

    # -- the operations policy ----------------------------------------------------

    def test_minimal_policy_is_sufficient(
        self, openbao: OpenBaoDevServer, policy_token: str, root: hvac.Client
    ) -> None:
        assert root.auth.token.lookup(policy_token)["data"]["policies"] == [POLICY_NAME]
        kms = make_kms(openbao, policy_token)
        name = subject_key_name()
        kms.health()
        assert kms.create_key(name).created is True
        assert kms.create_key(name).created is False
        dek = kms.generate_data_key(name)
        assert kms.unwrap_data_key(name, dek.wrapped) == dek.plaintext
        assert kms.probe(name, dek.wrapped).destroyed is False
        receipt = kms.destroy_key(name)
        assert (receipt.key_unusable, receipt.material_destroyed) == (True, True)
        assert kms.destroy_key(name).already_destroyed is True
        assert kms.probe(name, dek.wrapped).destroyed is True
        with pytest.raises(KeyDestroyed):
            kms.create_key(name)
        kms.close()

    def test_minimal_policy_allows_no_exportable_keys_export_backup_listing_or_restore(
        self, openbao: OpenBaoDevServer, policy_token: str, kms: VaultTransitKms
    ) -> None:
        name = subject_key_name()
        kms.create_key(name)
        client = openbao.client(policy_token)
        transit = client.secrets.transit
        for call in (
            lambda: transit.export_key(name, key_type="encryption-key"),
            lambda: transit.backup_key(name),
            lambda: transit.restore_key("AAAA", name=name),
            lambda: transit.list_keys(),
            lambda: transit.rotate_key(name),
            lambda: transit.encrypt_data(name, plaintext="AAAA"),
            lambda: transit.update_key_configuration(name, exportable=True),
            lambda: transit.update_key_configuration(name, allow_plaintext_backup=True),
            lambda: transit.create_key(subject_key_name(), exportable=True),
            lambda: transit.create_key(subject_key_name(), allow_plaintext_backup=True),
            lambda: transit.create_key(subject_key_name(), key_type="chacha20-poly1305"),
            lambda: transit.create_key(subject_key_name(), derived=True),
            lambda: client.adapter.post(f"/v1/transit/keys/{name}/soft-delete-restore"),
            lambda: client.sys.list_mounted_secrets_engines(),
        ):
            with pytest.raises(hvac_exc.Forbidden):
                call()
        client.adapter.close()


def test_dev_server_restart_keeps_its_address_but_loses_state() -> None:
    """The helper's ``stop``/``start`` really is an empty server on the same port."""
    with OpenBaoDevServer() as server:
        kms = make_kms(server, server.token)
        name = subject_key_name()
        kms.create_key(name)
        addr = server.addr
        server.stop()
        with pytest.raises(KmsUnavailable):
            kms.health()
        server.start()
        assert server.addr == addr
        kms.health()
        with pytest.raises(KeyDestroyed):
            kms.generate_data_key(name)
        kms.close()
