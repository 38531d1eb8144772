"""The local software KMS passes the shared contract, and its deleted bytes leave the disk."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from lethe.keys.filescan import find_in_files
from lethe.keys.local import LocalKms
from lethe.keys.protocol import KeyManager
from tests.kms_contract import KeyManagerContract, subject_key_name


class TestLocalKms(KeyManagerContract):
    @pytest.fixture
    def kms(self, tmp_path: Path) -> Iterator[KeyManager]:
        kms = LocalKms.open_in(tmp_path / "keys")
        yield kms
        kms.close()


def _stored_wrapped_key(path: Path, name: str) -> bytes:
    with sqlite3.connect(path) as db:
        return db.execute("SELECT wrapped_kek FROM subject_keys WHERE name=?", (name,)).fetchone()[0]


def test_wrapped_key_bytes_are_absent_from_keystore_and_wal_after_destruction(tmp_path: Path) -> None:
    kms = LocalKms.open_in(tmp_path / "keys")
    names = [subject_key_name() for _ in range(50)]
    for n in names:
        kms.create_key(n)
        kms.generate_data_key(n)
    victim = names[17]
    wrapped = _stored_wrapped_key(kms.keystore_path, victim)
    files = [kms.keystore_path, Path(f"{kms.keystore_path}-wal")]
    # The scan can fail: before destruction the bytes are on disk (scanned by a child process:
    # this process holds a keystore connection and must not open and close its files).
    assert any(find_in_files(files, [wrapped]).values())
    receipt = kms.destroy_key(victim)
    assert receipt.material_destroyed and receipt.details["wrapped_key_bytes_found"] == []
    assert not any(find_in_files(files, [wrapped]).values())
    assert kms.generate_data_key(names[18]).wrapped  # the others still work
    kms.close()


def test_master_key_and_keystore_are_private_to_the_owner(tmp_path: Path) -> None:
    kms = LocalKms.open_in(tmp_path / "keys")
    assert os.stat(tmp_path / "keys" / "master.key").st_mode & 0o777 == 0o600
    assert os.stat(kms.keystore_path).st_mode & 0o777 == 0o600
    assert os.stat(tmp_path / "keys").st_mode & 0o777 == 0o700
    kms.close()
