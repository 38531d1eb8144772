"""Envelope encryption for memory content: the safe recipe callers use.

Callers hand over a data key, the bytes and the context to bind; nonces, key
derivation and the AEAD live here so no other module touches ``cryptography.hazmat``.

Exceptions:
- ``DecryptionFailed``: the ciphertext is not authentic under this key and context.
  Deliberately opaque: it never says whether the key, the nonce, the AAD or the bytes
  were wrong, and never carries content.
"""

from __future__ import annotations

import hmac
import os
from collections.abc import Sequence
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

NONCE_BYTES = 12
KEY_BYTES = 32
_FORMAT = b"\x01"  # leading version byte so the scheme can evolve


class DecryptionFailed(Exception):
    """Ciphertext did not authenticate (wrong key, wrong context or tampered bytes)."""


def new_data_key() -> bytes:
    """A fresh random 256-bit key."""
    return os.urandom(KEY_BYTES)


def create_private_file(path: Path) -> bool:
    """Create an empty 0600 file (for a store SQLite will open); False if it exists.

    O_EXCL: when the file exists no descriptor is opened, so nothing is closed either
    (closing a descriptor of a live SQLite file would drop this process's locks on it).
    """
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return False
    os.close(fd)
    return True


def create_secret_file(path: Path, nbytes: int = KEY_BYTES) -> bool:
    """Write ``nbytes`` random bytes to a new 0600 file; False if it exists (never overwritten)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return False
    with os.fdopen(fd, "wb") as fh:
        fh.write(os.urandom(nbytes))
    return True


def encrypt_for_subject(data_key: bytes, plaintext: bytes, context: bytes) -> bytes:
    """AES-256-GCM with a random 96-bit nonce; ``context`` is bound as AAD."""
    nonce = os.urandom(NONCE_BYTES)
    return _FORMAT + nonce + AESGCM(data_key).encrypt(nonce, plaintext, context)


def decrypt_for_subject(data_key: bytes, sealed: bytes, context: bytes) -> bytes:
    """Inverse of ``encrypt_for_subject``; raises ``DecryptionFailed`` on any mismatch."""
    if len(data_key) != KEY_BYTES:
        raise DecryptionFailed("ciphertext did not authenticate")
    return _open(AESGCM(data_key), sealed, context)


def decrypt_many_for_subject(data_key: bytes, items: Sequence[tuple[bytes, bytes]]) -> list[bytes | None]:
    """Each ``(sealed, context)`` opened under one data key, in order; None for any that does
    not authenticate (the caller leaves it out, as it would a ``DecryptionFailed``). One AEAD
    context for the batch: a search opens a scope's thousand vectors, and the per-call set-up
    was most of their cost."""
    if len(data_key) != KEY_BYTES:
        return [None] * len(items)
    aead = AESGCM(data_key)
    out: list[bytes | None] = []
    for sealed, context in items:
        try:
            out.append(_open(aead, sealed, context))
        except DecryptionFailed:
            out.append(None)
    return out


def _open(aead: AESGCM, sealed: bytes, context: bytes) -> bytes:
    """One sealed value under an AEAD context; ``DecryptionFailed`` on any mismatch."""
    if len(sealed) < 1 + NONCE_BYTES + 16 or sealed[:1] != _FORMAT:
        raise DecryptionFailed("ciphertext did not authenticate")
    view = memoryview(sealed)  # slices of a view: no copy of the ciphertext
    try:
        return aead.decrypt(view[1 : 1 + NONCE_BYTES], view[1 + NONCE_BYTES :], context)
    except InvalidTag:
        raise DecryptionFailed("ciphertext did not authenticate") from None


def derive_key(data_key: bytes, purpose: bytes) -> bytes:
    """A sub-key for one purpose, so the AEAD key is never reused as a MAC key."""
    return HKDF(algorithm=hashes.SHA256(), length=KEY_BYTES, salt=None, info=purpose).derive(data_key)


def content_commitment(data_key: bytes, content: bytes) -> str:
    """HMAC-SHA256 of the content under a key derived from the subject's data key.

    Once the data key is destroyed this is an unlinkable commitment: nobody can run a
    dictionary of likely contents against it.
    """
    return hmac.digest(derive_key(data_key, b"lethe content-hmac v1"), content, "sha256").hex()


def keyed_digest(key: bytes, value: bytes) -> str:
    """HMAC-SHA256 as hex: pseudonymous references (subject refs, term hashes)."""
    return hmac.digest(key, value, "sha256").hex()


def aead_wrap(kek: bytes, secret: bytes, context: bytes) -> bytes:
    """Wrap a key under a key-encryption key (used by the local KMS)."""
    return encrypt_for_subject(kek, secret, context)


def aead_unwrap(kek: bytes, wrapped: bytes, context: bytes) -> bytes:
    """Unwrap a key; raises ``DecryptionFailed`` if it does not authenticate."""
    return decrypt_for_subject(kek, wrapped, context)
