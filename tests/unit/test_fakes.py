"""The test doubles keep the ports' contracts, so unit tests that use them prove something."""

from __future__ import annotations

import pytest

from lethe.keys.protocol import KeyManager, KmsUnavailable
from tests.kms_contract import KeyManagerContract
from tests.unit.fakes import FakeKms


class TestFakeKms(KeyManagerContract):
    @pytest.fixture
    def kms(self) -> KeyManager:
        return FakeKms()

    def test_backend_implements_the_key_manager_port(self, kms: KeyManager) -> None:
        assert isinstance(kms, KeyManager)  # the fake names itself "fake", not local or vault


def test_a_fake_outage_fails_every_call_as_unavailable():
    kms = FakeKms()
    kms.create_key("k")
    kms.down = True
    for call in (kms.health, lambda: kms.create_key("k"), lambda: kms.destroy_key("k")):
        with pytest.raises(KmsUnavailable):
            call()
