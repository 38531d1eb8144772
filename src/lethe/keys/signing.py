"""Ed25519 signing for checkpoints and erasure certificates.

This is the only module that touches ``cryptography``'s signature primitives (the
hazmat layer stays under ``keys/``); the rest of Lethe sees raw bytes and PEM.

The signing key is kept as a password-encrypted PKCS#8 PEM at rest. Verification is
a pure function of public data so an auditor can run it offline: it answers
True or False and never raises, whatever it is fed.

Exceptions:
- ``SigningKeyError`` (a ``ValueError``): a private or public key could not be loaded
  (malformed PEM, not an Ed25519 key, wrong or missing password, wrong length seed),
  or a private key could not be exported (empty password).
"""

from __future__ import annotations

from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)

__all__ = [
    "PUBLIC_KEY_SIZE",
    "SIGNATURE_SIZE",
    "Ed25519Signer",
    "SigningKeyError",
    "load_public_key_pem",
    "verify_ed25519",
]

PUBLIC_KEY_SIZE = 32
SIGNATURE_SIZE = 64
_SEED_SIZE = 32
_PEM_PREFIX = b"-----BEGIN"


class SigningKeyError(ValueError):
    """A signing or verification key could not be loaded or exported."""


class Ed25519Signer:
    """An Ed25519 private key that signs messages (RFC 8032, pure Ed25519).

    Signatures are deterministic: the same key and message always give the same
    64 bytes, which makes known-answer tests against other implementations possible.
    """

    __slots__ = ("_key",)

    def __init__(self, key: Ed25519PrivateKey) -> None:
        if not isinstance(key, Ed25519PrivateKey):
            raise SigningKeyError("not an Ed25519 private key")
        self._key = key

    def __repr__(self) -> str:
        return f"Ed25519Signer(public_key={self.public_key_raw().hex()})"

    @classmethod
    def generate(cls) -> Ed25519Signer:
        """Create a new random key (from the OS CSPRNG)."""
        return cls(Ed25519PrivateKey.generate())

    @classmethod
    def from_seed(cls, seed: bytes) -> Ed25519Signer:
        """Load a key from its 32-byte RFC 8032 private seed.

        For interoperability (e.g. Go's ``note`` signer keys carry the seed) and
        known-answer tests; keys at rest are stored with ``to_encrypted_pem``.
        """
        if not isinstance(seed, bytes) or len(seed) != _SEED_SIZE:
            raise SigningKeyError("an Ed25519 seed is exactly 32 bytes")
        return cls(Ed25519PrivateKey.from_private_bytes(seed))

    @classmethod
    def from_encrypted_pem(cls, pem: bytes, password: bytes) -> Ed25519Signer:
        """Load a key written by ``to_encrypted_pem``."""
        try:
            key = serialization.load_pem_private_key(pem, password=password)
        except (ValueError, TypeError, UnsupportedAlgorithm) as exc:
            # ValueError: malformed PEM or wrong password; TypeError: the PEM is not
            # encrypted (or the password is missing); UnsupportedAlgorithm: unknown
            # key type or cipher.
            raise SigningKeyError("cannot load the signing key (bad PEM or password)") from exc
        if not isinstance(key, Ed25519PrivateKey):
            raise SigningKeyError("the PEM holds a private key that is not Ed25519")
        return cls(key)

    def to_encrypted_pem(self, password: bytes) -> bytes:
        """Export as PKCS#8 PEM encrypted under ``password`` (best available cipher)."""
        if not isinstance(password, bytes) or not password:
            raise SigningKeyError("a non-empty password is required to export a signing key")
        return self._key.private_bytes(
            encoding=serialization.Encoding.PEM,
            format=serialization.PrivateFormat.PKCS8,
            encryption_algorithm=serialization.BestAvailableEncryption(password),
        )

    def public_key_pem(self) -> bytes:
        """The public key as SubjectPublicKeyInfo PEM (what auditors download)."""
        return self._key.public_key().public_bytes(
            encoding=serialization.Encoding.PEM,
            format=serialization.PublicFormat.SubjectPublicKeyInfo,
        )

    def public_key_raw(self) -> bytes:
        """The 32-byte RFC 8032 public key (what signed-note key ids hash)."""
        return self._key.public_key().public_bytes(
            encoding=serialization.Encoding.Raw,
            format=serialization.PublicFormat.Raw,
        )

    def sign(self, message: bytes) -> bytes:
        """Return the 64-byte Ed25519 signature of ``message``."""
        return self._key.sign(message)


def _public_key(public_key_raw_or_pem: bytes) -> Ed25519PublicKey:
    """Parse a raw 32-byte key or a SubjectPublicKeyInfo PEM; raise SigningKeyError."""
    data = public_key_raw_or_pem
    if not isinstance(data, bytes):
        raise SigningKeyError("a public key is given as bytes")
    if len(data) == PUBLIC_KEY_SIZE and not data.startswith(_PEM_PREFIX):
        try:
            return Ed25519PublicKey.from_public_bytes(data)
        except ValueError as exc:
            raise SigningKeyError("not a valid Ed25519 public key") from exc
    try:
        key = serialization.load_pem_public_key(data)
    except (ValueError, TypeError, UnsupportedAlgorithm) as exc:
        raise SigningKeyError("not a public key PEM") from exc
    if not isinstance(key, Ed25519PublicKey):
        raise SigningKeyError("the PEM holds a public key that is not Ed25519")
    return key


def load_public_key_pem(pem: bytes) -> bytes:
    """Return the raw 32-byte key of an Ed25519 SubjectPublicKeyInfo PEM.

    Raises ``SigningKeyError`` if ``pem`` is not such a PEM.
    """
    if not isinstance(pem, bytes) or not pem.lstrip().startswith(_PEM_PREFIX):
        raise SigningKeyError("not a public key PEM")
    return _public_key(pem.lstrip()).public_bytes(
        encoding=serialization.Encoding.Raw,
        format=serialization.PublicFormat.Raw,
    )


def verify_ed25519(public_key_raw_or_pem: bytes, message: bytes, signature: bytes) -> bool:
    """True if ``signature`` is a valid Ed25519 signature of ``message``.

    The key is a raw 32-byte key or a SubjectPublicKeyInfo PEM. Any malformed input
    (wrong types, wrong lengths, a PEM of another key type) gives False: an auditor's
    verifier must fail closed, not crash.
    """
    if not isinstance(message, bytes) or not isinstance(signature, bytes):
        return False
    if len(signature) != SIGNATURE_SIZE:
        return False
    try:
        key = _public_key(public_key_raw_or_pem)
        key.verify(signature, message)
    except (SigningKeyError, InvalidSignature, ValueError, TypeError):
        return False
    return True
