"""The erasure certificate's format, as the offline verifier reads it.

Its names and signature domains (v3 is issued; v1 and v2 certificates still verify), the
result classes of v3 and how the evidence decides them (``result_of``), the order
the core steps must come in, what the signature covers (``signed_bytes``), the subject
commitments (v1: salted SHA-256, which anyone holding the certificate can test guesses
against; v2: HMAC keyed by the verification code handed out once when the request was
filed, which confirms no guess without that code), and small typed accessors
that turn every missing or mistyped field into a ``CheckFailed`` naming it, so the
verifier fails closed with a reason instead of crashing.

Part of the standalone verifier: like ``vault.audit.verify`` it imports only the
standard library and the verifier's own pure helpers (``vault.audit.checkpoint``,
``vault.canonical``); see ``vault.audit.verify`` for the whole set.

Exceptions: ``CheckFailed``, one failed check; the verifier turns it into
``Check(ok=False)`` and never lets it out.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
import secrets
import unicodedata
from datetime import datetime
from typing import Any, TypeVar

from lethe.vault.audit.checkpoint import Checkpoint
from lethe.vault.audit.step_names import Step
from lethe.vault.canonical import canonical_json

_T = TypeVar("_T")

FORMAT_V1 = "lethe-erasure-certificate/v1"
FORMAT_V2 = "lethe-erasure-certificate/v2"
FORMAT_V3 = "lethe-erasure-certificate/v3"
FORMAT = FORMAT_V3  # what Lethe issues
FORMATS = (FORMAT_V1, FORMAT_V2, FORMAT_V3)
SIGNATURE_DOMAIN = FORMAT.encode() + b"\n"
# v3's result classes: what the evidence shows was done, nothing more
ERASED, NOTHING_HELD, PARTIAL = "erased", "nothing_held", "partial"
RESULTS = (ERASED, NOTHING_HELD, PARTIAL)
KEY_MATERIAL = "key_material"  # a missing part: a key generation whose material is not confirmed destroyed
KEY = "key"  # a missing part: memories held, but no key generation in the evidence
# subject commitment schemes of v2: keyed by the verification code, or (requests filed
# before v2, which have no code) the v1 salted hash with its salt
KEYED_SCHEME = "hmac-sha256-verification-code"
SALTED_SCHEME = "sha256-salted"
COMMITMENT_DOMAIN = b"lethe-subject-commitment/v2\n"
CODE_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"  # Crockford base32: no I, L, O, U
CODE_CHARS = 25  # 125 bits
RECEIVED_EVENT, STEP_EVENT = "erasure.received", "erasure.step"
MAX_DOCUMENT_BYTES = 32 * 1024 * 1024
_TIME_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"


# Unicode's Default_Ignorable_Code_Point property (DerivedCoreProperties.txt, Unicode 15.1;
# Python's unicodedata does not expose it): code points a renderer shows as nothing.
_DEFAULT_IGNORABLE = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
    "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8\U0001bca0-\U0001bca3"
    "\U0001d173-\U0001d17a\U000e0000-\U000e0fff]"
)


def fold_subject_id(value: str) -> str:
    """``value`` without default-ignorable code points, then NFC (removing one, such as a
    zero-width space between a letter and its combining accent, can let them compose): the
    subject id as Lethe keys it (``memory.validation.normal_subject_id``) and commits to it."""
    return unicodedata.normalize("NFC", _DEFAULT_IGNORABLE.sub("", value))


class CheckFailed(Exception):
    """One check failed, with the reason."""


def signature_domain(format_name: Any) -> bytes:
    """The domain prefix of a format's signature: its name and a newline (v2's for anything
    unknown, so an unknown format never verifies under v1's or v3's domain)."""
    return (format_name if format_name in (FORMAT_V1, FORMAT_V3) else FORMAT_V2).encode() + b"\n"


def signed_bytes(document: dict[str, Any]) -> bytes:
    """What the certificate signature covers: the format's domain prefix and the
    canonical document without its ``signature`` member."""
    unsigned = {k: v for k, v in document.items() if k != "signature"}
    return signature_domain(document.get("format")) + canonical_json(unsigned)


def compute_subject_commitment(salt_hex: str, tenant_id: str, subject_id: str) -> str:
    """SHA-256(salt || UTF-8 tenant id || UTF-8 NFC(subject id)), hex (v1 and pre-v2 requests)."""
    subject = unicodedata.normalize("NFC", subject_id)
    return hashlib.sha256(bytes.fromhex(salt_hex) + tenant_id.encode() + subject.encode()).hexdigest()


def new_verification_code() -> str:
    """A fresh code of ``CODE_CHARS`` Crockford base32 characters, grouped by five."""
    raw = "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_CHARS))
    return "-".join(raw[i : i + 5] for i in range(0, CODE_CHARS, 5))


def normal_verification_code(code: str) -> str:
    """The code as the HMAC key uses it: upper case, without separators, O->0 and I/L->1
    (Crockford's reading of look-alikes). Raises ``ValueError`` if it is not a code."""
    text = "".join(ch for ch in code.strip().upper() if ch not in "- \t")
    text = text.translate(str.maketrans("OIL", "011"))
    if len(text) != CODE_CHARS or any(ch not in CODE_ALPHABET for ch in text):
        raise ValueError(f"a verification code is {CODE_CHARS} letters and digits (dashes optional)")
    return text


def keyed_subject_commitment(code: str, tenant_id: str, subject_id: str) -> str:
    """hex(HMAC-SHA256(key=normal code, COMMITMENT_DOMAIN || u32be(len tenant) || tenant ||
    NFC(subject id))), all text UTF-8. Without the code nobody can recompute it, so a list
    of candidate ids tests nothing."""
    tenant = tenant_id.encode()
    subject = unicodedata.normalize("NFC", subject_id).encode()  # the caller folds (``fold_subject_id``)
    message = COMMITMENT_DOMAIN + len(tenant).to_bytes(4, "big") + tenant + subject
    key = normal_verification_code(code).encode("ascii")
    return hmac.new(key, message, hashlib.sha256).hexdigest()


REQUEST_SUBJECT_REF = "request_subject_ref"  # v3: the per-request subject reference its events carry


def events_subject_ref(doc: dict[str, Any]) -> str:
    """The subject reference every embedded event must carry: v3's per-request
    ``subject.request_subject_ref`` (requests filed since certificates stopped naming the
    stable ref), else ``subject.subject_ref`` (v1, v2, and v3 requests filed before). A
    certificate naming both, or a v1/v2 one naming a per-request ref, fails."""
    subject = field_of(doc, "subject", dict)
    if REQUEST_SUBJECT_REF in subject:
        if doc.get("format") != FORMAT_V3:
            raise CheckFailed("only a v3 certificate carries a per-request subject reference")
        if "subject_ref" in subject:
            raise CheckFailed("the subject carries both a stable and a per-request reference")
        return field_of(subject, REQUEST_SUBJECT_REF, str, "subject.")
    return field_of(subject, "subject_ref", str, "subject.")


def result_of(steps: list[dict[str, Any]]) -> tuple[str, list[tuple[str, int | None]]]:
    """The result class the steps' evidence supports, and the parts missing (``partial``).

    The key generations in the evidence are those with a destruction receipt or a refusal
    (``key_destroyed``) or a probe (``verified``). A generation is confirmed destroyed when
    its probe shows it destroyed, or a ``key_irrecoverable`` receipt shows its material
    destroyed. ``nothing_held``: no memory forgotten and no generation at all; ``erased``:
    every generation (at least one) confirmed; ``partial``: anything else, each unconfirmed
    generation (or, memories without any generation, the key) named as missing. Raises
    ``CheckFailed`` if a generation is not a whole number.
    """
    evidence: dict[str, dict[str, Any]] = {}
    for s in steps:
        name, ev = s.get("name"), s.get("evidence")
        if isinstance(name, str) and isinstance(ev, dict):
            evidence[name] = ev

    def items(step: str, key: str) -> list[dict[str, Any]]:
        value = evidence.get(step, {}).get(key)
        return [x for x in value if isinstance(x, dict)] if isinstance(value, list) else []

    def generation(item: dict[str, Any]) -> int:
        g = item.get("generation")
        if not isinstance(g, int) or isinstance(g, bool):
            raise CheckFailed("a key generation in the evidence is not a whole number")
        return g

    receipts, probes = items(Step.KEY_DESTROYED, "receipts"), items(Step.VERIFIED, "key_probes")
    final, refused = items(Step.KEY_IRRECOVERABLE, "receipts"), items(Step.KEY_DESTROYED, "refused")
    generations = {generation(x) for x in receipts + probes + refused}
    confirmed = {generation(p) for p in probes if p.get("destroyed") is True} | {
        generation(r) for r in final if r.get("material_destroyed") is True
    }
    memories = evidence.get(Step.TOMBSTONED, {}).get("memories_forgotten")
    if not generations:
        if type(memories) is int and memories == 0:  # not False, not 0.0: as the browser twin reads it
            return NOTHING_HELD, []
        return PARTIAL, [(KEY, None)]
    missing: list[tuple[str, int | None]] = [(KEY_MATERIAL, g) for g in sorted(generations - confirmed)]
    return (PARTIAL, missing) if missing else (ERASED, [])


def check_residue(doc: dict[str, Any], steps: list[dict[str, Any]]) -> str:
    """v3's optional ``residue`` counts say what the ``residue_hunted`` step's evidence says:
    the same identifiers, choice and memories found; ``retract``: every one retracted by the
    hunt, none kept or pending; ``review``: each queued memory counted once as retracted
    (rejected), kept (with a reviewer's reason), pending or expired. A hunt without counts,
    or counts without a hunt, fails. Raises ``CheckFailed``; returns a summary in words."""
    step = next((s for s in steps if s.get("name") == Step.RESIDUE_HUNTED), None)
    counts = doc.get("residue")
    if step is None and counts is None:
        return "no identifiers were attached"
    if step is None or not isinstance(counts, dict):
        raise CheckFailed("residue: the counts and the residue_hunted step must come together")
    ev = field_of(step, "evidence", dict, "residue_hunted.")
    for key in ("residue", "identifiers", "found", "queued_for_review", "derived_retracted"):
        if counts.get(key) != ev.get(key):
            raise CheckFailed(f"residue: {key} differs from the residue_hunted step's evidence")
    kept, rejected = field_of(counts, "kept", list), field_of(counts, "rejected", list)
    pending, expired = field_of(counts, "pending_review", int), field_of(counts, "expired_in_review", int)
    retracted = field_of(counts, "retracted", int)
    for i, k in enumerate(kept + rejected):
        if not field_of(k, "reason", str, f"residue decision {i}.").strip():
            raise CheckFailed("residue: a reviewer's decision states no reason")
    if ev.get("residue") == "retract":
        if retracted != ev.get("retracted") or retracted != ev.get("found") or kept or rejected or pending:
            raise CheckFailed("residue: retract was chosen but the counts do not show every memory retracted")
        return f"{retracted} memory(ies) of other subjects found and retracted"
    if retracted != len(rejected) or retracted + len(kept) + pending + expired != ev.get("queued_for_review"):
        raise CheckFailed("residue: the review outcomes do not add up to the memories queued")
    if ev.get("queued_for_review") != ev.get("found"):
        raise CheckFailed("residue: review was chosen but not every memory found was queued")
    return (
        f"{ev.get('found')} found: {retracted} retracted, {len(kept)} kept with a reason, {pending} pending"
    )


def refused_generations(steps: list[dict[str, Any]]) -> set[Any]:
    """The generations whose destruction the KMS refused past Lethe's window (``refused`` in
    the ``key_destroyed`` evidence): missing for good, as Lethe stopped asking."""
    for s in steps:
        ev = s.get("evidence")
        if (
            s.get("name") == Step.KEY_DESTROYED
            and isinstance(ev, dict)
            and isinstance(ev.get("refused"), list)
        ):
            return {r.get("generation") for r in ev["refused"] if isinstance(r, dict)}
    return set()


# -- typed accessors: every malformed field becomes a named failure -------------------------


def field_of(obj: Any, key: str, kind: type[_T], where: str = "") -> _T:
    if not isinstance(obj, dict) or key not in obj:
        raise CheckFailed(f"missing field {where}{key}")
    value = obj[key]
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
        raise CheckFailed(f"field {where}{key} has the wrong type")
    return value


def optional_str(obj: Any, key: str, where: str = "") -> str | None:
    if not isinstance(obj, dict) or key not in obj:
        raise CheckFailed(f"missing field {where}{key}")
    value = obj[key]
    if value is not None and not isinstance(value, str):
        raise CheckFailed(f"field {where}{key} has the wrong type")
    return value


def b64_bytes(text: Any, what: str) -> bytes:
    if not isinstance(text, str):
        raise CheckFailed(f"{what} is not base64 text")
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError) as exc:
        raise CheckFailed(f"{what} is not valid base64") from exc


def timestamp(text: Any, what: str) -> datetime:
    if not isinstance(text, str):
        raise CheckFailed(f"{what} is not a timestamp")
    try:
        return datetime.strptime(text, _TIME_FORMAT)
    except ValueError as exc:
        raise CheckFailed(f"{what} is not a timestamp of the form 2026-01-31T12:00:00.000000Z") from exc


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"duplicate member name {k!r}")
        out[k] = v
    return out


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def strict_json(data: bytes) -> Any:
    return json.loads(data.decode("utf-8"), object_pairs_hook=_no_duplicates, parse_constant=_reject_constant)


def json_object(data: bytes, what: str) -> dict[str, Any]:
    """``data`` parsed as one JSON object, or ``CheckFailed`` saying which of the three it is
    not (UTF-8 text, JSON, an object): a person fixing a file needs to know which."""
    try:
        doc = strict_json(data)
    except UnicodeDecodeError as exc:
        raise CheckFailed(f"the {what} is not UTF-8 text (byte {exc.start} cannot be decoded)") from exc
    except (ValueError, RecursionError) as exc:
        raise CheckFailed(f"the {what} is not valid JSON: {exc}") from exc
    if not isinstance(doc, dict):
        raise CheckFailed(f"the {what} is not a JSON object")
    return doc


def steps_of(doc: dict[str, Any]) -> list[dict[str, Any]]:
    steps = field_of(doc, "steps", list)
    if not steps:
        raise CheckFailed("the certificate lists no steps")
    for i, s in enumerate(steps):
        if not isinstance(s, dict):
            raise CheckFailed(f"steps[{i}] is not an object")
    return steps


def step_name(step: Any, i: int) -> str:
    name = step.get("name") if isinstance(step, dict) else None
    return name if isinstance(name, str) and name else f"#{i}"


def note_checkpoint(note: Any) -> Checkpoint:
    """The checkpoint body of a note, without checking its signature."""
    if not isinstance(note, str) or "\n\n" not in note:
        raise CheckFailed("the embedded checkpoint is not a signed note")
    return Checkpoint.from_body(note[: note.rfind("\n\n") + 1])


def older_note_of(older: str | bytes | None) -> str:
    """A signed note, from note text or from another certificate holding one."""
    if isinstance(older, bytes):
        try:
            older = older.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CheckFailed("the older checkpoint is not UTF-8 text") from exc
    if not isinstance(older, str):
        raise CheckFailed("no older checkpoint given")
    if older.lstrip().startswith("{"):
        other = strict_json(older.encode("utf-8"))
        return field_of(field_of(other, "checkpoint", dict), "note", str, "checkpoint.")
    return older
