"""Signed checkpoints are C2SP tlog-checkpoint bodies in C2SP signed notes.

Cross-checks against other implementations, copied from their tests:
- golang.org/x/mod/sumdb/note note_test.go (github.com/golang/mod): the PeterNeumann
  signer key, its verifier key, and the exact note Go's ``note.Sign`` produces; the
  EnochRoot verifier key and signature; the malformed notes ``note.Open`` rejects.
- google/trillian-examples formats/log checkpoint_test.go: a real checkpoint of the
  Go checksum database signed by sum.golang.org, and that log's verifier key.
- RFC 8032 section 7.1, TEST 1, for Ed25519 itself.
"""

from __future__ import annotations

import base64
from dataclasses import replace

import pytest

from lethe.keys.signing import (
    Ed25519Signer,
    SigningKeyError,
    load_public_key_pem,
    verify_ed25519,
)
from lethe.vault.audit.checkpoint import (
    Checkpoint,
    CheckpointError,
    key_id,
    parse_and_verify,
    parse_vkey,
    sign_checkpoint,
    sign_note,
    verify_note,
    vkey,
)

# --- golang.org/x/mod/sumdb/note test vectors ----------------------------------------

PETER_SKEY = "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz"
PETER_VKEY = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW"
ENOCH_VKEY = "EnochRoot+af0cfe78+ATtqJ7zOtqQtYqOo0CpvDXNlMhV3HeJDpjrASKGLWdop"
NOTE_TEXT = (
    "If you think cryptography is the answer to your problem,\nthen you don't know what your problem is.\n"
)
PETER_SIG = (
    "\u2014 PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqf"
    "qdngotpRZb6KE6RyyBwJnAM=\n"
)
ENOCH_SIG = (
    "\u2014 EnochRoot rwz+eBzmZa0SO3NbfRGzPCpDckykFXSdeX+MNtCOXm2/5n2tiOHp+vAF1aGrQ5ovTG01oOT"
    "GwnWLox33WWd1RvMc+QQ=\n"
)

# --- google/trillian-examples formats/log/checkpoint_test.go -------------------------

SUMDB_VKEY = "sum.golang.org+033de0ae+Ac4zctda0e5eza+HJyk9SxEdh+s3Ux18htTTAD8OuAn8"
SUMDB_CHECKPOINT = (
    "go.sum database tree\n"
    "6476701\n"
    "mb8QLQIs0Z0yP5Cstq6guj87oXWeC9gEM8oVikmm9Wk=\n"
    "\n"
    "\u2014 sum.golang.org Az3grsLX85Gz+s1SiTbgkuqxgItqFq7gsMUEyVnrsa9LM7Us9S+1xbFIGu95949rj4nP"
    "RYfvimWEPWL+o3GeoWwOoAw=\n"
)


def peter_signer() -> Ed25519Signer:
    """Go's note signer key is 'PRIVATE+KEY+name+hash+base64(0x01 || seed)'."""
    encoded = PETER_SKEY.split("+", 4)[4]
    raw = base64.b64decode(encoded)
    assert raw[0] == 0x01
    return Ed25519Signer.from_seed(raw[1:])


def test_vkey_of_go_test_key_matches_go_output() -> None:
    assert vkey("PeterNeumann", peter_signer().public_key_raw()) == PETER_VKEY


def test_key_id_matches_published_verifier_keys() -> None:
    for verifier_key, hex_id in [
        (PETER_VKEY, "c74f20a3"),
        (ENOCH_VKEY, "af0cfe78"),
        (SUMDB_VKEY, "033de0ae"),
    ]:
        name, public_key = parse_vkey(verifier_key)
        assert key_id(name, public_key) == bytes.fromhex(hex_id)
        assert vkey(name, public_key) == verifier_key


def test_sign_note_reproduces_go_note_sign_byte_for_byte() -> None:
    assert sign_note(NOTE_TEXT, "PeterNeumann", peter_signer()) == NOTE_TEXT + "\n" + PETER_SIG


def test_go_signed_note_verifies_under_each_of_its_keys() -> None:
    note = NOTE_TEXT + "\n" + PETER_SIG + ENOCH_SIG
    for verifier_key in (PETER_VKEY, ENOCH_VKEY):
        name, public_key = parse_vkey(verifier_key)
        assert verify_note(note, name, public_key) == NOTE_TEXT


def test_note_with_a_corrupted_signature_by_the_key_is_rejected() -> None:
    # note_test.go "Invalid signature": four characters spliced in at byte 60.
    raw = PETER_SIG.encode()
    bad = (raw[:60] + b"ABCD" + raw[60:]).decode()
    name, public_key = parse_vkey(PETER_VKEY)
    with pytest.raises(CheckpointError, match="invalid signature"):
        verify_note(NOTE_TEXT + "\n" + bad, name, public_key)


@pytest.mark.parametrize(
    "note",
    [
        NOTE_TEXT.encode(),
        (NOTE_TEXT + "\n").encode(),
        (NOTE_TEXT + "\n" + PETER_SIG[:-1]).encode(),
        ("\x01" + NOTE_TEXT + "\n" + PETER_SIG).encode(),
        b"\xff" + (NOTE_TEXT + "\n" + PETER_SIG).encode(),
        (
            NOTE_TEXT + "\n" + "\u2014 Bad Name x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUg"
            "YN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM="
        ).encode(),
        (NOTE_TEXT + "\n" + PETER_SIG + "Unexpected line.\n").encode(),
    ],
    ids=[
        "no-signatures",
        "blank-line-only",
        "no-final-newline",
        "control-character",
        "invalid-utf8",
        "space-in-key-name",
        "trailing-non-signature-line",
    ],
)
def test_malformed_notes_rejected_by_go_are_rejected(note: bytes) -> None:
    name, public_key = parse_vkey(PETER_VKEY)
    with pytest.raises(CheckpointError):
        verify_note(note, name, public_key)


def test_more_than_100_signatures_is_malformed() -> None:
    name, public_key = parse_vkey(PETER_VKEY)
    with pytest.raises(CheckpointError, match="too many"):
        verify_note(NOTE_TEXT + "\n" + PETER_SIG * 101, name, public_key)


def test_real_sum_golang_org_checkpoint_parses_and_verifies() -> None:
    name, public_key = parse_vkey(SUMDB_VKEY)
    cp = parse_and_verify(SUMDB_CHECKPOINT, name, public_key, origin="go.sum database tree")
    assert cp.origin == "go.sum database tree"
    assert cp.size == 6476701
    assert cp.root == base64.b64decode("mb8QLQIs0Z0yP5Cstq6guj87oXWeC9gEM8oVikmm9Wk=")
    assert cp.extensions == ()


def test_real_checkpoint_with_unexpected_origin_is_rejected() -> None:
    name, public_key = parse_vkey(SUMDB_VKEY)
    with pytest.raises(CheckpointError, match="origin"):
        parse_and_verify(SUMDB_CHECKPOINT, name, public_key, origin="Go rocks but I might have the wrong ID")


# --- Lethe's own checkpoints: round trip and tampering ------------------------------

ORIGIN = "lethe.example/audit"
ROOT = bytes.fromhex("5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328")
URLSAFE_ROOT = base64.urlsafe_b64encode(b"\xff" * 32).decode()  # "____...8=": not std base64


@pytest.fixture(scope="module")
def signer() -> Ed25519Signer:
    return Ed25519Signer.generate()


@pytest.fixture(scope="module")
def checkpoint() -> Checkpoint:
    return Checkpoint(origin=ORIGIN, size=8, root=ROOT)


@pytest.fixture(scope="module")
def signed(signer: Ed25519Signer, checkpoint: Checkpoint) -> str:
    return sign_checkpoint(checkpoint, ORIGIN, signer)


def test_signed_checkpoint_has_the_tlog_checkpoint_layout(signer: Ed25519Signer, signed: str) -> None:
    body, signature_block = signed.split("\n\n")
    assert body == f"{ORIGIN}\n8\n{base64.b64encode(ROOT).decode()}"
    assert signature_block.startswith(f"\u2014 {ORIGIN} ")
    assert signature_block.endswith("\n") and signature_block.count("\n") == 1
    raw = base64.b64decode(signature_block.split(" ")[2])
    assert len(raw) == 4 + 64
    assert raw[:4] == key_id(ORIGIN, signer.public_key_raw())


def test_sign_then_parse_round_trips(signer: Ed25519Signer, checkpoint: Checkpoint, signed: str) -> None:
    assert parse_and_verify(signed, ORIGIN, signer.public_key_raw()) == checkpoint
    assert parse_and_verify(signed.encode(), ORIGIN, signer.public_key_raw()) == checkpoint
    assert parse_and_verify(signed, ORIGIN, signer.public_key_raw(), origin=ORIGIN) == checkpoint


def test_parse_accepts_the_public_key_as_pem(
    signer: Ed25519Signer, checkpoint: Checkpoint, signed: str
) -> None:
    assert parse_and_verify(signed, ORIGIN, signer.public_key_pem()) == checkpoint


def test_empty_tree_and_extension_lines_round_trip(signer: Ed25519Signer) -> None:
    cp = Checkpoint(origin=ORIGIN, size=0, root=bytes(32), extensions=("ext one", "ext two"))
    assert parse_and_verify(sign_checkpoint(cp, ORIGIN, signer), ORIGIN, signer.public_key_raw()) == cp


def test_signature_by_another_key_is_ignored(
    signer: Ed25519Signer, checkpoint: Checkpoint, signed: str
) -> None:
    witness = Ed25519Signer.generate()
    cosigned = signed + sign_note(checkpoint.body(), "witness.example", witness).split("\n\n")[1]
    assert parse_and_verify(cosigned, ORIGIN, signer.public_key_raw()) == checkpoint
    assert parse_and_verify(cosigned, "witness.example", witness.public_key_raw()) == checkpoint


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("\n8\n", "\n9\n"),
        (base64.b64encode(ROOT).decode(), base64.b64encode(bytes(32)).decode()),
        (ORIGIN + "\n8", "lethe.example/other\n8"),
    ],
    ids=["size", "root", "origin"],
)
def test_tampered_body_fails_verification(signer: Ed25519Signer, signed: str, old: str, new: str) -> None:
    tampered = signed.replace(old, new, 1)
    assert tampered != signed
    with pytest.raises(CheckpointError, match="invalid signature"):
        parse_and_verify(tampered, ORIGIN, signer.public_key_raw())


def test_flipped_signature_bit_fails_verification(signer: Ed25519Signer, signed: str) -> None:
    body, line = signed.split("\n\n")
    prefix, encoded = line.rstrip("\n").rsplit(" ", 1)
    raw = bytearray(base64.b64decode(encoded))
    raw[10] ^= 0x01
    tampered = f"{body}\n\n{prefix} {base64.b64encode(bytes(raw)).decode()}\n"
    with pytest.raises(CheckpointError, match="invalid signature"):
        parse_and_verify(tampered, ORIGIN, signer.public_key_raw())


def test_renamed_signature_line_carries_no_signature_by_the_key(signer: Ed25519Signer, signed: str) -> None:
    renamed = signed.replace(f"\u2014 {ORIGIN} ", "\u2014 lethe.example/other ")
    with pytest.raises(CheckpointError, match="no signature"):
        parse_and_verify(renamed, ORIGIN, signer.public_key_raw())


def test_verifying_under_another_name_or_key_fails(signer: Ed25519Signer, signed: str) -> None:
    with pytest.raises(CheckpointError, match="no signature"):
        parse_and_verify(signed, "lethe.example/other", signer.public_key_raw())
    with pytest.raises(CheckpointError, match="no signature"):
        parse_and_verify(signed, ORIGIN, Ed25519Signer.generate().public_key_raw())


def test_a_second_bad_signature_by_the_key_rejects_the_note(signer: Ed25519Signer, signed: str) -> None:
    line = signed.split("\n\n")[1]
    prefix, encoded = line.rstrip("\n").rsplit(" ", 1)
    raw = base64.b64decode(encoded)
    forged = raw[:4] + bytes(64)
    doubled = signed + f"{prefix} {base64.b64encode(forged).decode()}\n"
    with pytest.raises(CheckpointError, match="invalid signature"):
        parse_and_verify(doubled, ORIGIN, signer.public_key_raw())


def test_crlf_line_endings_are_malformed(signer: Ed25519Signer, signed: str) -> None:
    with pytest.raises(CheckpointError, match="control"):
        parse_and_verify(signed.replace("\n", "\r\n"), ORIGIN, signer.public_key_raw())


@pytest.mark.parametrize(
    "body",
    [
        f"{ORIGIN}\n8\n",
        f"{ORIGIN}\n08\n{base64.b64encode(ROOT).decode()}\n",
        f"{ORIGIN}\n+8\n{base64.b64encode(ROOT).decode()}\n",
        f"{ORIGIN}\n 8\n{base64.b64encode(ROOT).decode()}\n",
        f"{ORIGIN}\n\uff18\n{base64.b64encode(ROOT).decode()}\n",
        f"{ORIGIN}\n-1\n{base64.b64encode(ROOT).decode()}\n",
        f"{ORIGIN}\n{2**64}\n{base64.b64encode(ROOT).decode()}\n",
        f"{ORIGIN}\n8\n{base64.b64encode(ROOT[:31]).decode()}\n",
        f"{ORIGIN}\n8\n{base64.b64encode(ROOT).decode().rstrip('=')}\n",
        f"{ORIGIN}\n8\n{URLSAFE_ROOT}\n",
        f"{ORIGIN}\n8\n{base64.b64encode(ROOT).decode()}\n\nempty extension line\n",
        f"\n8\n{base64.b64encode(ROOT).decode()}\n",
    ],
    ids=[
        "missing-root",
        "leading-zero",
        "plus-sign",
        "space",
        "fullwidth-digit",
        "negative",
        "beyond-uint64",
        "short-root",
        "unpadded-root",
        "urlsafe-root",
        "empty-extension",
        "empty-origin",
    ],
)
def test_signed_but_malformed_checkpoint_body_is_rejected(signer: Ed25519Signer, body: str) -> None:
    note = sign_note(body, ORIGIN, signer)
    with pytest.raises(CheckpointError):
        parse_and_verify(note, ORIGIN, signer.public_key_raw())


def test_non_canonical_base64_root_is_rejected(signer: Ed25519Signer) -> None:
    canonical = base64.b64encode(ROOT).decode()
    # The final character before '=' carries 2 unused bits; set one of them.
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    last = canonical[-2]
    sloppy = canonical[:-2] + alphabet[alphabet.index(last) | 1] + "="
    assert sloppy != canonical and base64.b64decode(sloppy) == ROOT
    note = sign_note(f"{ORIGIN}\n8\n{sloppy}\n", ORIGIN, signer)
    with pytest.raises(CheckpointError, match="canonical"):
        parse_and_verify(note, ORIGIN, signer.public_key_raw())


@pytest.mark.parametrize(
    "kwargs",
    [
        {"origin": "", "size": 1, "root": ROOT},
        {"origin": "two\nlines", "size": 1, "root": ROOT},
        {"origin": ORIGIN, "size": -1, "root": ROOT},
        {"origin": ORIGIN, "size": 2**64, "root": ROOT},
        {"origin": ORIGIN, "size": True, "root": ROOT},
        {"origin": ORIGIN, "size": 1, "root": ROOT[:31]},
        {"origin": ORIGIN, "size": 1, "root": ROOT.hex()},
        {"origin": ORIGIN, "size": 1, "root": ROOT, "extensions": ("",)},
    ],
)
def test_invalid_checkpoints_cannot_be_built(kwargs: dict[str, object]) -> None:
    with pytest.raises(CheckpointError):
        Checkpoint(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["", "has space", "has+plus", "tab\there", "nbsp\u00a0"])
def test_invalid_key_names_are_refused(signer: Ed25519Signer, name: str) -> None:
    with pytest.raises(CheckpointError):
        sign_checkpoint(Checkpoint(ORIGIN, 1, ROOT), name, signer)


@pytest.mark.parametrize(
    "verifier_key",
    [
        "PeterNeumann+c74f20a4+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW",
        "PeterNeumann+c74f20a3+ZRpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW",
        "PeterNeumann+cc469956+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TWBADKEY==",
        "PeterNeumann+c74f20a3",
        "PeterNeumann+c74f20+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW",
        "Peter Neumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW",
    ],
    ids=["wrong-id", "unknown-algorithm", "wrong-length", "no-key", "short-id", "space"],
)
def test_mangled_verifier_keys_are_refused(verifier_key: str) -> None:
    with pytest.raises(CheckpointError):
        parse_vkey(verifier_key)


def test_a_faulty_signer_is_caught_before_publishing(checkpoint: Checkpoint) -> None:
    class FaultySigner:
        def __init__(self) -> None:
            self._real = Ed25519Signer.generate()

        def public_key_raw(self) -> bytes:
            return self._real.public_key_raw()

        def sign(self, message: bytes) -> bytes:
            return self._real.sign(message + b"oops")

    with pytest.raises(CheckpointError, match="does not verify"):
        sign_checkpoint(checkpoint, ORIGIN, FaultySigner())


def test_checkpoint_can_be_rebuilt_with_a_new_size(checkpoint: Checkpoint) -> None:
    assert replace(checkpoint, size=9).body().splitlines()[1] == "9"


def test_checkpoint_error_is_a_value_error() -> None:
    assert issubclass(CheckpointError, ValueError)


# --- keys.signing -------------------------------------------------------------------

RFC8032_SEED = bytes.fromhex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
RFC8032_PUBLIC = bytes.fromhex("d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a")
RFC8032_SIG_EMPTY = bytes.fromhex(
    "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"
)


def test_ed25519_matches_rfc8032_test_1() -> None:
    signer = Ed25519Signer.from_seed(RFC8032_SEED)
    assert signer.public_key_raw() == RFC8032_PUBLIC
    assert signer.sign(b"") == RFC8032_SIG_EMPTY
    assert verify_ed25519(RFC8032_PUBLIC, b"", RFC8032_SIG_EMPTY)


def test_encrypted_pem_round_trips_and_needs_the_password() -> None:
    signer = Ed25519Signer.generate()
    pem = signer.to_encrypted_pem(b"correct horse")
    assert pem.startswith(b"-----BEGIN ENCRYPTED PRIVATE KEY-----")
    loaded = Ed25519Signer.from_encrypted_pem(pem, b"correct horse")
    assert loaded.public_key_raw() == signer.public_key_raw()
    assert verify_ed25519(signer.public_key_pem(), b"m", loaded.sign(b"m"))
    with pytest.raises(SigningKeyError):
        Ed25519Signer.from_encrypted_pem(pem, b"wrong horse")
    with pytest.raises(SigningKeyError):
        Ed25519Signer.from_encrypted_pem(b"not a pem", b"correct horse")
    with pytest.raises(SigningKeyError):
        signer.to_encrypted_pem(b"")


def test_public_key_pem_loads_back_to_the_raw_key() -> None:
    signer = Ed25519Signer.generate()
    assert load_public_key_pem(signer.public_key_pem()) == signer.public_key_raw()
    with pytest.raises(SigningKeyError):
        load_public_key_pem(b"-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n")


def test_repr_does_not_reveal_the_private_key() -> None:
    signer = Ed25519Signer.from_seed(RFC8032_SEED)
    assert RFC8032_SEED.hex() not in repr(signer)


@pytest.mark.parametrize(
    ("key", "message", "signature"),
    [
        (RFC8032_PUBLIC, b"x", RFC8032_SIG_EMPTY),
        (RFC8032_PUBLIC, b"", RFC8032_SIG_EMPTY[:-1]),
        (RFC8032_PUBLIC, b"", RFC8032_SIG_EMPTY + b"\x00"),
        (RFC8032_PUBLIC[:31], b"", RFC8032_SIG_EMPTY),
        (b"-----BEGIN PUBLIC KEY-----\ngarbage\n-----END PUBLIC KEY-----\n", b"", RFC8032_SIG_EMPTY),
        ("not bytes", b"", RFC8032_SIG_EMPTY),
        (RFC8032_PUBLIC, "not bytes", RFC8032_SIG_EMPTY),
        (RFC8032_PUBLIC, b"", None),
        (None, None, None),
    ],
)
def test_verify_ed25519_returns_false_and_never_raises_on_bad_input(
    key: object, message: object, signature: object
) -> None:
    assert verify_ed25519(key, message, signature) is False  # type: ignore[arg-type]
