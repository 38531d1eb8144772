"""A software KMS for the embedded default: one SQLite keystore, one master key file.

Each subject key (a random 256-bit key-encryption key) is stored wrapped by the
master key, in a SQLite file of its own, never in the data database, so data backups
never contain keys. Destruction deletes the row with ``secure_delete`` on, truncates
the WAL and vacuums, then scans the files to show the wrapped key's bytes are gone.

Limits, stated plainly: this proves absence from the keystore's files as SQLite sees
them; it cannot prove what a copy-on-write filesystem or an SSD's firmware kept. Use
the Vault/OpenBao backend where that matters.

Exceptions: ``KeyDestroyed`` (destroyed or unknown key), ``UnwrapFailed`` (bytes not
valid under a live key), ``KmsUnavailable`` (keystore file unreadable or locked).
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from lethe.keys.envelope import (
    DecryptionFailed,
    aead_unwrap,
    aead_wrap,
    create_private_file,
    create_secret_file,
    new_data_key,
)
from lethe.keys.filescan import FileScanFailed, find_in_files
from lethe.keys.protocol import (
    DataKey,
    DestructionReceipt,
    KeyDestroyed,
    KeyInfo,
    KmsUnavailable,
    ProbeResult,
    UnwrapFailed,
)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS subject_keys (
    name TEXT PRIMARY KEY,
    wrapped_kek BLOB NOT NULL,
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS destroyed_keys (
    name TEXT PRIMARY KEY,
    destroyed_at TEXT NOT NULL
);
"""


def _now() -> str:
    return datetime.now(UTC).isoformat()


class LocalKms:
    """``KeyManager`` over a local SQLite keystore (``backend = "local"``)."""

    backend = "local"

    def __init__(self, keystore_path: Path, master_key_path: Path) -> None:
        self._path = Path(keystore_path)
        try:
            self._master = Path(master_key_path).read_bytes()
        except OSError as exc:
            raise KmsUnavailable("local KMS master key file is not readable") from exc
        if len(self._master) != 32:
            raise KmsUnavailable("local KMS master key file is malformed")
        self._lock = threading.Lock()
        self._path.parent.mkdir(parents=True, exist_ok=True)
        create_private_file(self._path)  # 0600 before SQLite creates it (its WAL and SHM copy the mode)
        self._db = sqlite3.connect(self._path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA secure_delete=ON")
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA busy_timeout=5000")
        self._db.executescript(_SCHEMA)

    @classmethod
    def open_in(cls, key_dir: Path) -> LocalKms:
        """Open (creating if needed) the keystore and master key in ``key_dir``."""
        key_dir = Path(key_dir)
        key_dir.mkdir(parents=True, exist_ok=True)
        os.chmod(key_dir, 0o700)
        create_secret_file(key_dir / "master.key")
        return cls(key_dir / "keystore.sqlite3", key_dir / "master.key")

    @property
    def keystore_path(self) -> Path:
        return self._path

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
            except sqlite3.Error as exc:
                raise KmsUnavailable("local keystore is locked or unreadable") from exc
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _is_destroyed(self, db: sqlite3.Connection, name: str) -> bool:
        return db.execute("SELECT 1 FROM destroyed_keys WHERE name=?", (name,)).fetchone() is not None

    def _kek(self, db: sqlite3.Connection, name: str) -> bytes:
        row = db.execute("SELECT wrapped_kek FROM subject_keys WHERE name=?", (name,)).fetchone()
        if row is None:
            raise KeyDestroyed("key is destroyed or does not exist")
        try:
            return aead_unwrap(self._master, row[0], b"lethe-local-kek|" + name.encode())
        except DecryptionFailed as exc:
            raise KmsUnavailable("keystore entry does not match the master key") from exc

    def create_key(self, name: str) -> KeyInfo:
        with self._tx() as db:
            if self._is_destroyed(db, name):
                raise KeyDestroyed("a destroyed key is never re-created")
            exists = db.execute("SELECT 1 FROM subject_keys WHERE name=?", (name,)).fetchone()
            if exists is None:
                wrapped = aead_wrap(self._master, new_data_key(), b"lethe-local-kek|" + name.encode())
                db.execute(
                    "INSERT INTO subject_keys(name, wrapped_kek, created_at) VALUES (?,?,?)",
                    (name, wrapped, _now()),
                )
        return KeyInfo(
            name, self.backend, exportable=False, plaintext_backup_allowed=False, created=exists is None
        )

    def generate_data_key(self, name: str) -> DataKey:
        with self._tx() as db:
            kek = self._kek(db, name)
        dek = new_data_key()
        return DataKey(plaintext=dek, wrapped=aead_wrap(kek, dek, b"lethe-dek|" + name.encode()))

    def unwrap_data_key(self, name: str, wrapped: bytes) -> bytes:
        with self._lock:
            kek = self._kek(self._db, name)
        try:
            return aead_unwrap(kek, wrapped, b"lethe-dek|" + name.encode())
        except DecryptionFailed as exc:
            raise UnwrapFailed("wrapped data key is not valid under this key") from exc

    def destroy_key(self, name: str) -> DestructionReceipt:
        with self._tx() as db:
            row = db.execute("SELECT wrapped_kek FROM subject_keys WHERE name=?", (name,)).fetchone()
            already = row is None and self._is_destroyed(db, name)
            db.execute("DELETE FROM subject_keys WHERE name=?", (name,))
            db.execute(
                "INSERT OR IGNORE INTO destroyed_keys(name, destroyed_at) VALUES (?,?)",
                (name, _now()),
            )
        with self._lock:
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            self._db.execute("VACUUM")
            self._db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        residue = self.scan_for(row[0]) if row is not None else []
        return DestructionReceipt(
            name=name,
            backend=self.backend,
            destroyed_at=_now(),
            key_unusable=True,
            material_destroyed=not residue,
            already_destroyed=already,
            details={
                "secure_delete": True,
                "wal_checkpoint": "TRUNCATE",
                "vacuum": True,
                "files_scanned": [p.name for p in self._files()],
                "wrapped_key_bytes_found": residue,
            },
        )

    def probe(self, name: str, wrapped: bytes) -> ProbeResult:
        try:
            self.unwrap_data_key(name, wrapped)
            failed = False
        except (KeyDestroyed, UnwrapFailed):
            failed = True
        with self._lock:
            present = (
                self._db.execute("SELECT 1 FROM subject_keys WHERE name=?", (name,)).fetchone() is not None
            )
        return ProbeResult(name, self.backend, unwrap_failed=failed, key_present=present)

    def health(self) -> None:
        try:
            with self._lock:
                self._db.execute("SELECT 1").fetchone()
        except sqlite3.Error as exc:
            raise KmsUnavailable("local keystore is not usable") from exc

    def _files(self) -> list[Path]:
        candidates = [self._path, Path(str(self._path) + "-wal"), Path(str(self._path) + "-journal")]
        return [p for p in candidates if p.exists()]

    def scan_for(self, needle: bytes) -> list[str]:
        """Names of keystore files (database, WAL) that still contain ``needle``.

        The scan runs in a child process: this process holds a connection to the
        keystore, and opening and closing its files here would drop SQLite's locks.
        """
        try:
            hits = find_in_files(self._files(), [needle])
        except FileScanFailed as exc:
            raise KmsUnavailable("the keystore files could not be scanned") from exc
        return sorted(Path(path).name for path, found in hits.items() if found)
