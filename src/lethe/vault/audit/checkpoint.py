"""Signed checkpoints: C2SP ``tlog-checkpoint`` bodies inside C2SP ``signed-note``s.

A checkpoint commits the log to a tree head (origin, size, root) under an Ed25519
signature, in the format of Go's ``golang.org/x/mod/sumdb/note`` and the C2SP specs
(https://c2sp.org/tlog-checkpoint, https://c2sp.org/signed-note), so standard
transparency-log tooling (witnesses, ``note.Open``) reads Lethe's checkpoints::

    example.com/lethe
    42
    <base64 of the 32-byte root>

    — example.com/lethe <base64(4-byte key id || 64-byte Ed25519 signature)>

The signature covers the note text: every byte up to and including the body's final
newline. The key id is SHA-256(name || 0x0A || 0x01 || public key)[:4]; the verifier
key string ``name+<hex key id>+<base64(0x01 || public key)>`` is what auditors pin.

Verification follows the signed-note rules: signature lines of other keys (a witness,
a rotated key) are ignored; every line with our key name and key id must verify; at
least one must. Anything else fails closed.

Exceptions:
- ``CheckpointError`` (422; a ``VaultError`` and a ``ValueError``, defined in
  ``vault.errors``): a note or checkpoint is malformed (bad UTF-8, control characters,
  missing blank line or signature block, bad base64, size not canonical decimal, root
  not 32 bytes, more than 100 signatures, ...), carries no signature by the expected
  key, carries a signature by that key that does not verify, names an unexpected
  origin; or a checkpoint, key name or verifier key given to this module is invalid,
  or a signer produced a signature that does not verify.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from dataclasses import dataclass
from typing import Protocol

from lethe.keys.signing import SigningKeyError, load_public_key_pem, verify_ed25519
from lethe.vault.errors import CheckpointError

__all__ = [
    "ED25519_SIGNATURE_TYPE",
    "Checkpoint",
    "CheckpointError",
    "NoteSigner",
    "key_id",
    "parse_and_verify",
    "parse_vkey",
    "sign_checkpoint",
    "sign_note",
    "verify_note",
    "vkey",
]

ED25519_SIGNATURE_TYPE = 0x01
_SIG_PREFIX = "\u2014 "  # em dash, space
_MAX_SIGNATURES = 100  # as Go's note.Open; the spec asks for at least 16
_MAX_TREE_SIZE = 2**64 - 1
_HASH_SIZE = 32
_KEY_SIZE = 32
_ED25519_SIG_SIZE = 64
_DECIMAL = re.compile(r"0|[1-9][0-9]{0,19}")
_HEX8 = re.compile(r"[0-9a-fA-F]{8}")


class NoteSigner(Protocol):
    """What signing a note needs: ``keys.signing.Ed25519Signer`` provides it."""

    def public_key_raw(self) -> bytes: ...

    def sign(self, message: bytes) -> bytes: ...


def _has_control(text: str) -> bool:
    """True if ``text`` holds an ASCII control character other than newline."""
    return any(c < " " and c != "\n" for c in text)


def _is_utf8(text: str) -> bool:
    """True if ``text`` encodes to UTF-8 (it holds no lone surrogates)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _valid_line(line: object) -> bool:
    """A non-empty single line of valid text with no control characters."""
    return (
        isinstance(line, str)
        and line != ""
        and "\n" not in line
        and not _has_control(line)
        and _is_utf8(line)
    )


def _valid_name(name: object) -> bool:
    """A signed-note key name: non-empty, no Unicode space, no plus, no controls."""
    return (
        _valid_line(name) and isinstance(name, str) and "+" not in name and not any(c.isspace() for c in name)
    )


def _b64decode(text: str) -> bytes:
    """Standard base64 with padding, rejecting any other character."""
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError) as exc:
        raise CheckpointError("malformed base64") from exc


def _raw_public_key(public_key: bytes) -> bytes:
    """Accept a raw 32-byte Ed25519 key or a SubjectPublicKeyInfo PEM."""
    if isinstance(public_key, bytes) and len(public_key) == _KEY_SIZE:
        return public_key
    try:
        return load_public_key_pem(public_key)
    except SigningKeyError as exc:
        raise CheckpointError("the public key is neither 32 raw bytes nor an Ed25519 PEM") from exc


@dataclass(frozen=True)
class Checkpoint:
    """A tree head: the log's ``origin``, its ``size`` in leaves and its ``root``.

    ``extensions`` are the optional extra body lines of tlog-checkpoint; Lethe writes
    none but keeps any it reads, since the signature covers them.
    """

    origin: str
    size: int
    root: bytes
    extensions: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not _valid_line(self.origin):
            raise CheckpointError("origin must be one non-empty line without control characters")
        if (
            not isinstance(self.size, int)
            or isinstance(self.size, bool)
            or not 0 <= self.size <= _MAX_TREE_SIZE
        ):
            raise CheckpointError("size must be an integer between 0 and 2**64 - 1")
        if not isinstance(self.root, bytes) or len(self.root) != _HASH_SIZE:
            raise CheckpointError("root must be 32 bytes")
        if not isinstance(self.extensions, tuple) or not all(_valid_line(e) for e in self.extensions):
            raise CheckpointError("extension lines must be non-empty single lines")

    def body(self) -> str:
        """The note text: origin, decimal size, base64 root, extensions; newline-ended."""
        lines = [self.origin, str(self.size), base64.b64encode(self.root).decode("ascii")]
        lines.extend(self.extensions)
        return "\n".join(lines) + "\n"

    @classmethod
    def from_body(cls, text: str) -> Checkpoint:
        """Parse a checkpoint note text (as returned by ``verify_note``)."""
        if not isinstance(text, str) or not text.endswith("\n"):
            raise CheckpointError("checkpoint text must end with a newline")
        lines = text[:-1].split("\n")
        if len(lines) < 3:
            raise CheckpointError("checkpoint needs origin, size and root lines")
        origin, size_line, root_line, *extensions = lines
        if not _DECIMAL.fullmatch(size_line):
            raise CheckpointError("tree size is not a canonical decimal number")
        root = _b64decode(root_line)
        if len(root) != _HASH_SIZE or base64.b64encode(root).decode("ascii") != root_line:
            raise CheckpointError("root hash is not the canonical base64 of 32 bytes")
        return cls(origin=origin, size=int(size_line), root=root, extensions=tuple(extensions))


def key_id(name: str, public_key_raw: bytes) -> bytes:
    """The 4-byte signed-note key id: SHA-256(name || 0x0A || 0x01 || key)[:4]."""
    if not _valid_name(name):
        raise CheckpointError(f"invalid key name {name!r}")
    if not isinstance(public_key_raw, bytes) or len(public_key_raw) != _KEY_SIZE:
        raise CheckpointError("an Ed25519 public key is 32 bytes")
    digest = hashlib.sha256(
        name.encode("utf-8") + b"\n" + bytes([ED25519_SIGNATURE_TYPE]) + public_key_raw
    ).digest()
    return digest[:4]


def vkey(name: str, public_key_raw: bytes) -> str:
    """The note verifier key: ``<name>+<hex key id>+<base64(0x01 || public key)>``."""
    kid = key_id(name, public_key_raw)
    encoded = base64.b64encode(bytes([ED25519_SIGNATURE_TYPE]) + public_key_raw).decode("ascii")
    return f"{name}+{kid.hex()}+{encoded}"


def parse_vkey(verifier_key: str) -> tuple[str, bytes]:
    """Split a verifier key into (name, raw Ed25519 public key), checking its key id."""
    if not isinstance(verifier_key, str):
        raise CheckpointError("a verifier key is a string")
    parts = verifier_key.split("+", 2)
    if len(parts) != 3 or not _HEX8.fullmatch(parts[1]):
        raise CheckpointError("malformed verifier key")
    name, hex_id, encoded = parts
    if not _valid_name(name):
        raise CheckpointError("malformed verifier key name")
    key = _b64decode(encoded)
    if len(key) != 1 + _KEY_SIZE or key[0] != ED25519_SIGNATURE_TYPE:
        raise CheckpointError("verifier key is not an Ed25519 key")
    public_key = key[1:]
    if key_id(name, public_key) != bytes.fromhex(hex_id):
        raise CheckpointError("verifier key id does not match its name and key")
    return name, public_key


def sign_note(text: str, name: str, signer: NoteSigner) -> str:
    """Sign ``text`` (newline-terminated) and return the signed note."""
    if not isinstance(text, str) or not text.endswith("\n"):
        raise CheckpointError("note text must end with a newline")
    if _has_control(text) or not _is_utf8(text):
        raise CheckpointError("note text must be valid UTF-8 without control characters")
    public_key = signer.public_key_raw()
    kid = key_id(name, public_key)
    message = text.encode("utf-8")
    signature = signer.sign(message)
    # Fail closed on a faulty signer rather than publish a note nobody can verify.
    if not verify_ed25519(public_key, message, signature):
        raise CheckpointError("the signer produced a signature that does not verify")
    encoded = base64.b64encode(kid + signature).decode("ascii")
    return f"{text}\n{_SIG_PREFIX}{name} {encoded}\n"


def verify_note(note: str | bytes, name: str, public_key: bytes) -> str:
    """Check ``note`` is signed by the key (``name``, ``public_key``); return its text.

    ``public_key`` is the raw 32-byte key or its PEM. Signatures by other keys are
    ignored; every signature by this key must verify, and there must be one.
    """
    if isinstance(note, bytes):
        try:
            note = note.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CheckpointError("malformed note: not UTF-8") from exc
    if not isinstance(note, str) or not _is_utf8(note):
        raise CheckpointError("malformed note: not UTF-8 text")
    if _has_control(note):
        raise CheckpointError("malformed note: control characters")
    raw_key = _raw_public_key(public_key)
    kid = key_id(name, raw_key)

    split = note.rfind("\n\n")
    if split < 0:
        raise CheckpointError("malformed note: no blank line before the signatures")
    text, block = note[: split + 1], note[split + 2 :]
    if not block or not block.endswith("\n"):
        raise CheckpointError("malformed note: signature block must end with a newline")
    lines = block[:-1].split("\n")
    if len(lines) > _MAX_SIGNATURES:
        raise CheckpointError("malformed note: too many signatures")

    ours: list[bytes] = []
    for line in lines:
        if not line.startswith(_SIG_PREFIX):
            raise CheckpointError("malformed note: signature line without em dash prefix")
        signer_name, _, encoded = line[len(_SIG_PREFIX) :].partition(" ")
        if not _valid_name(signer_name) or not encoded:
            raise CheckpointError("malformed note: bad signature line")
        raw = _b64decode(encoded)
        if len(raw) < 5:
            raise CheckpointError("malformed note: signature too short")
        if signer_name == name and raw[:4] == kid:
            ours.append(raw[4:])

    if not ours:
        raise CheckpointError(f"note has no signature by key {name}+{kid.hex()}")
    message = text.encode("utf-8")
    for signature in ours:
        if len(signature) != _ED25519_SIG_SIZE or not verify_ed25519(raw_key, message, signature):
            raise CheckpointError(f"invalid signature for key {name}+{kid.hex()}")
    return text


def sign_checkpoint(cp: Checkpoint, name: str, signer: NoteSigner) -> str:
    """The signed note for ``cp`` under key ``name`` (by convention, the origin)."""
    return sign_note(cp.body(), name, signer)


def parse_and_verify(
    note_text: str | bytes,
    name: str,
    public_key_raw: bytes,
    *,
    origin: str | None = None,
) -> Checkpoint:
    """Verify a signed checkpoint and return it; raise ``CheckpointError`` otherwise.

    ``origin``, when given, must equal the checkpoint's origin line (a log's key may
    sign for several logs; checking the origin stops one log's head passing for another).
    """
    text = verify_note(note_text, name, public_key_raw)
    cp = Checkpoint.from_body(text)
    if origin is not None and cp.origin != origin:
        raise CheckpointError(f"checkpoint origin {cp.origin!r} is not {origin!r}")
    return cp
