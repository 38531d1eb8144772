"""The log's Ed25519 signing key and origin, kept in the key dir next to the KMS files.

Files in ``<data_dir>/keys`` (never in the database, so data backups never carry them):
- ``signing.pem`` (0600): the private key, PKCS#8 PEM encrypted under a passphrase;
- ``signing.passphrase`` (0600): a generated passphrase, written only when
  ``LETHE_SIGNING_KEY_PASSPHRASE`` is not set when the key is created;
- ``signing.pub.pem`` (0644): the public key, for auditors to pin;
- ``log-origin`` (0644): the checkpoint origin line, ``lethe.local/<instance id>``,
  derived once; ``LETHE_LOG_ORIGIN`` overrides it.

What the passphrase file protects, honestly: a copy of ``signing.pem`` that leaks
without the file (a backup of one directory, a misplaced copy) is useless. It does not
protect against anyone who can read the key dir on the host; put the passphrase in
``LETHE_SIGNING_KEY_PASSPHRASE`` from a secret store (and delete the file) for that.

Every file is created atomically and exclusively (written to a temporary file, then
hard-linked into place), so concurrent first starts agree on one key.

Exceptions:
- ``SigningKeyError`` (a ``ValueError``): the key cannot be loaded (no passphrase
  available, wrong passphrase, damaged PEM).
- ``ValueError``: ``LETHE_LOG_ORIGIN`` (or the stored origin) is not a valid
  signed-note key name (it must be one line with no spaces and no ``+``).
- ``OSError``: the key dir cannot be written or read.
"""

from __future__ import annotations

import os
import secrets
import uuid
from pathlib import Path

from lethe.api.settings import Settings
from lethe.keys.signing import Ed25519Signer, SigningKeyError
from lethe.vault.audit.checkpoint import CheckpointError, key_id

__all__ = ["ensure_signing_key", "load_signer", "log_origin"]

KEY_FILE = "signing.pem"
PASSPHRASE_FILE = "signing.passphrase"  # noqa: S105  (a file name, not a secret)
PUBLIC_KEY_FILE = "signing.pub.pem"
ORIGIN_FILE = "log-origin"


def _create_exclusive(path: Path, data: bytes, mode: int) -> bool:
    """Write ``path`` atomically unless it exists; False if another writer got there first."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)  # the umask may have narrowed it
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
        return True
    finally:
        tmp.unlink(missing_ok=True)


def _check_origin(origin: str) -> str:
    try:
        key_id(origin, bytes(32))
    except CheckpointError as exc:
        raise ValueError(
            f"log origin {origin!r} is not a valid signed-note key name (one line, no spaces, no '+')"
        ) from exc
    return origin


def _passphrase(settings: Settings) -> bytes | None:
    if settings.signing_key_passphrase is not None:
        return settings.signing_key_passphrase.get_secret_value().encode("utf-8")
    path = settings.key_dir / PASSPHRASE_FILE
    if path.exists():
        return path.read_bytes().strip()
    return None


def ensure_signing_key(settings: Settings) -> list[str]:
    """Create the signing key, its passphrase file and the log origin if missing.

    Idempotent; returns a line per file created, for ``lethe init`` to print.
    """
    key_dir = settings.key_dir
    key_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    created: list[str] = []
    key_path = key_dir / KEY_FILE
    if not key_path.exists():
        passphrase = _passphrase(settings)
        if passphrase is None:
            generated = secrets.token_urlsafe(32).encode("ascii")
            if _create_exclusive(key_dir / PASSPHRASE_FILE, generated + b"\n", 0o600):
                created.append(f"signing key passphrase {key_dir / PASSPHRASE_FILE} (0600)")
            passphrase = _passphrase(settings)
            assert passphrase is not None
        signer = Ed25519Signer.generate()
        if _create_exclusive(key_path, signer.to_encrypted_pem(passphrase), 0o600):
            created.append(f"audit signing key {key_path} (Ed25519, encrypted PEM, 0600)")
    pub_path = key_dir / PUBLIC_KEY_FILE
    if not pub_path.exists():
        _create_exclusive(pub_path, load_signer(settings).public_key_pem(), 0o644)
        created.append(f"audit public key {pub_path}")
    origin_path = key_dir / ORIGIN_FILE
    if not origin_path.exists():
        origin = f"lethe.local/{uuid.uuid4().hex[:16]}"
        if _create_exclusive(origin_path, origin.encode("ascii") + b"\n", 0o644):
            created.append(f"audit log origin {origin_path} ({origin})")
    return created


def load_signer(settings: Settings) -> Ed25519Signer:
    """The log's signing key, decrypted with the configured or stored passphrase."""
    key_path = settings.key_dir / KEY_FILE
    try:
        pem = key_path.read_bytes()
    except FileNotFoundError as exc:
        raise SigningKeyError(f"no audit signing key at {key_path}; run `lethe init`") from exc
    passphrase = _passphrase(settings)
    if passphrase is None:
        raise SigningKeyError(
            f"no passphrase for {key_path}: set LETHE_SIGNING_KEY_PASSPHRASE "
            f"or restore {settings.key_dir / PASSPHRASE_FILE}"
        )
    return Ed25519Signer.from_encrypted_pem(pem, passphrase)


def log_origin(settings: Settings) -> str:
    """The checkpoint origin: ``LETHE_LOG_ORIGIN`` if set, else the one stored at init."""
    if settings.log_origin:
        return _check_origin(settings.log_origin)
    path = settings.key_dir / ORIGIN_FILE
    try:
        return _check_origin(path.read_text("ascii").strip())
    except FileNotFoundError as exc:
        raise ValueError(f"no audit log origin at {path}; run `lethe init`") from exc
