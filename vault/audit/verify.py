"""Offline verification of an erasure certificate: no database, no server, no network.

An auditor holds three things: the certificate (canonical JSON), the issuer's public
key (pinned out of band, e.g. from ``lethe audit public-key``) and optionally the
subject id and an older checkpoint they kept. ``verify_certificate`` checks, as named
checks, each reported separately:

- ``parse``: UTF-8 JSON object, no duplicate member names;
- ``canonical_form``: the bytes are exactly the RFC 8785 form of what they parse to;
- ``format``: a known format version, and the required fields with the right types;
- ``signature``: Ed25519 over ``SIGNATURE_DOMAIN || canonical(document minus
  "signature")`` by the pinned key; the key id and fingerprint name that key. The
  domain prefix means no other Lethe signature (a checkpoint note) can pass as one;
- ``checkpoint_signature``: the embedded C2SP checkpoint is signed by the same key for
  the issuer's origin;
- ``inclusion:<step>``: the step's audit event (its canonical bytes) is the leaf at
  its index in the checkpoint's tree (RFC 9162 inclusion proof);
- ``event:<step>``: that event says what the certificate says: type, request id,
  tenant, subject ref, step name, evidence, time, and ``seq == leaf index + 1``;
- ``step_order``: the core steps, in order, first; leaf indices increasing; times
  non-decreasing and agreeing with the request's received/completed times;
- ``evidence``: every step carries evidence, and the evidence supports the claim (keys
  unusable, probes show them destroyed, nothing retrievable, no index entries);
- ``subject_commitment`` (with ``subject_id``): SHA-256(salt || tenant || subject_id);
- ``tenant`` (with ``tenant``): the certificate is for that tenant;
- ``older_checkpoint`` (with ``older_checkpoint``): the older checkpoint is signed by
  the pinned key, and the certificate's tree provably extends it (a consistency proof
  embedded in the certificate for that size, or one passed in ``consistency_proof``).

The step events are checked against the signed log head *and* against the certificate's
own claims, so a certificate re-signed by a dishonest holder of the key still fails
wherever its claims contradict the log it embeds.

Exceptions: none. Malformed input of any kind yields failed checks, never an
exception: a verifier must fail closed, not crash.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import itertools
import json
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from lethe.keys.signing import SigningKeyError, load_public_key_pem, verify_ed25519
from lethe.vault.audit.checkpoint import Checkpoint, key_id, parse_and_verify
from lethe.vault.canonical import canonical_json
from lethe.vault.merkle import leaf_hash, verify_consistency, verify_inclusion

__all__ = [
    "CORE_STEP_ORDER",
    "FORMAT",
    "SIGNATURE_DOMAIN",
    "Check",
    "VerificationResult",
    "compute_subject_commitment",
    "signed_bytes",
    "verify_certificate",
]

FORMAT = "lethe-erasure-certificate/v1"
SIGNATURE_DOMAIN = b"lethe-erasure-certificate/v1\n"
CORE_STEP_ORDER = ("received", "tombstoned", "derived_purged", "key_destroyed", "verified")
RECEIVED_EVENT, STEP_EVENT = "erasure.received", "erasure.step"
MAX_DOCUMENT_BYTES = 32 * 1024 * 1024
_TIME_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str


@dataclass(frozen=True)
class VerificationResult:
    checks: tuple[Check, ...]
    report_id: str | None = None

    @property
    def ok(self) -> bool:
        return bool(self.checks) and all(c.ok for c in self.checks)

    @property
    def first_failure(self) -> Check | None:
        return next((c for c in self.checks if not c.ok), None)

    @property
    def failed(self) -> list[str]:
        return [c.name for c in self.checks if not c.ok]

    def summary(self) -> str:
        if self.ok:
            return f"VERIFIED: all {len(self.checks)} checks passed"
        first = self.first_failure
        assert first is not None
        counts = f"{len(self.failed)} of {len(self.checks)} checks failed"
        return f"FAILED: {first.name}: {first.detail} ({counts})"


class _Fail(Exception):
    """One check failed, with the reason."""


def signed_bytes(document: dict[str, Any]) -> bytes:
    """What the certificate signature covers: the domain prefix and the canonical
    document without its ``signature`` member."""
    unsigned = {k: v for k, v in document.items() if k != "signature"}
    return SIGNATURE_DOMAIN + canonical_json(unsigned)


def compute_subject_commitment(salt_hex: str, tenant_id: str, subject_id: str) -> str:
    """SHA-256(salt || UTF-8 tenant id || UTF-8 NFC(subject id)), hex (as ``vault.erasure``)."""
    subject = unicodedata.normalize("NFC", subject_id)
    return hashlib.sha256(bytes.fromhex(salt_hex) + tenant_id.encode() + subject.encode()).hexdigest()


# -- small typed accessors: every malformed field becomes a named failure -------------------


def _field(obj: Any, key: str, kind: type | tuple[type, ...], where: str = "") -> Any:
    if not isinstance(obj, dict) or key not in obj:
        raise _Fail(f"missing field {where}{key}")
    value = obj[key]
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
        raise _Fail(f"field {where}{key} has the wrong type")
    return value


def _opt_str(obj: Any, key: str, where: str = "") -> str | None:
    if not isinstance(obj, dict) or key not in obj:
        raise _Fail(f"missing field {where}{key}")
    value = obj[key]
    if value is not None and not isinstance(value, str):
        raise _Fail(f"field {where}{key} has the wrong type")
    return value


def _b64(text: Any, what: str) -> bytes:
    if not isinstance(text, str):
        raise _Fail(f"{what} is not base64 text")
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError) as exc:
        raise _Fail(f"{what} is not valid base64") from exc


def _time(text: Any, what: str) -> datetime:
    if not isinstance(text, str):
        raise _Fail(f"{what} is not a timestamp")
    try:
        return datetime.strptime(text, _TIME_FORMAT)
    except ValueError as exc:
        raise _Fail(f"{what} is not a timestamp of the form 2026-01-31T12:00:00.000000Z") from exc


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise ValueError(f"duplicate member name {k!r}")
        out[k] = v
    return out


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _parse_json(data: bytes) -> Any:
    return json.loads(data.decode("utf-8"), object_pairs_hook=_no_duplicates, parse_constant=_reject_constant)


def _steps(doc: dict[str, Any]) -> list[dict[str, Any]]:
    steps = _field(doc, "steps", list)
    if not steps:
        raise _Fail("the certificate lists no steps")
    for i, s in enumerate(steps):
        if not isinstance(s, dict):
            raise _Fail(f"steps[{i}] is not an object")
    return steps


def _step_name(step: Any, i: int) -> str:
    name = step.get("name") if isinstance(step, dict) else None
    return name if isinstance(name, str) and name else f"#{i}"


def _note_checkpoint(note: Any) -> Checkpoint:
    """The checkpoint body of a note, without checking its signature."""
    if not isinstance(note, str) or "\n\n" not in note:
        raise _Fail("the embedded checkpoint is not a signed note")
    return Checkpoint.from_body(note[: note.rfind("\n\n") + 1])


# -- the checks -------------------------------------------------------------------------------


class _Verifier:
    def __init__(
        self,
        raw: bytes,
        public_key_pem: bytes,
        subject_id: str | None,
        tenant: str | None,
        older_checkpoint: str | bytes | None,
        consistency_proof: Any,
    ) -> None:
        self.raw = raw
        self.public_key_pem = public_key_pem
        self.subject_id = subject_id
        self.tenant = tenant
        self.older = older_checkpoint
        self.consistency_proof = consistency_proof
        self.checks: list[Check] = []
        self.doc: dict[str, Any] = {}

    def run(self, name: str, fn: Callable[[], str | None]) -> bool:
        try:
            detail = fn() or "ok"
        except _Fail as exc:
            self.checks.append(Check(name, False, str(exc)))
            return False
        except Exception as exc:  # fail closed on anything malformed
            self.checks.append(Check(name, False, f"malformed certificate ({type(exc).__name__}: {exc})"))
            return False
        self.checks.append(Check(name, True, detail))
        return True

    def pinned_key(self) -> bytes:
        try:
            return load_public_key_pem(self.public_key_pem)
        except SigningKeyError as exc:
            raise _Fail("the public key given is not an Ed25519 public key PEM") from exc

    # parse, form, format ------------------------------------------------------------------

    def parse(self) -> str:
        if not isinstance(self.raw, bytes | bytearray):
            raise _Fail("the certificate must be given as bytes")
        if len(self.raw) > MAX_DOCUMENT_BYTES:
            raise _Fail("the certificate is larger than 32 MiB")
        try:
            doc = _parse_json(bytes(self.raw))
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            raise _Fail(f"not a UTF-8 JSON document: {exc}") from exc
        if not isinstance(doc, dict):
            raise _Fail("the certificate is not a JSON object")
        self.doc = doc
        return f"{len(self.raw)} bytes of JSON"

    def canonical_form(self) -> str:
        if canonical_json(self.doc) != bytes(self.raw):
            raise _Fail("the bytes are not the RFC 8785 canonical form of the document")
        return "RFC 8785"

    def format(self) -> str:
        doc = self.doc
        if _field(doc, "format", str) != FORMAT:
            raise _Fail(f"unknown format {doc.get('format')!r}; expected {FORMAT}")
        for key in ("report_id", "issued_at", "tenant_id"):
            _field(doc, key, str)
        issuer = _field(doc, "issuer", dict)
        for key in ("origin", "key_id", "public_key_sha256"):
            _field(issuer, key, str, "issuer.")
        request = _field(doc, "request", dict)
        for key in ("id", "legal_basis", "requested_by", "received_at", "completed_at", "due_at"):
            _field(request, key, str, "request.")
        _opt_str(request, "reference", "request.")
        subject = _field(doc, "subject", dict)
        for key in ("commitment", "salt", "subject_ref"):
            _field(subject, key, str, "subject.")
        for i, step in enumerate(_steps(doc)):
            where = f"steps[{i}]."
            _field(step, "name", str, where)
            _field(step, "completed_at", str, where)
            _field(step, "evidence", dict, where)
            _field(step, "leaf_index", int, where)
            _field(step, "event", str, where)
            _field(step, "inclusion_proof", list, where)
        _field(doc, "what_remains", list)
        _field(doc, "backup_coverage", dict)
        _field(_field(doc, "checkpoint", dict), "note", str, "checkpoint.")
        _field(doc, "consistency_proofs", list)
        sig = _field(doc, "signature", dict)
        for key in ("algorithm", "key_id", "value"):
            _field(sig, key, str, "signature.")
        return FORMAT

    # signatures ------------------------------------------------------------------------

    def signature(self) -> str:
        doc = self.doc
        public = self.pinned_key()
        sig = _field(doc, "signature", dict)
        if _field(sig, "algorithm", str) != "Ed25519":
            raise _Fail("the signature algorithm is not Ed25519")
        issuer = _field(doc, "issuer", dict)
        origin = _field(issuer, "origin", str, "issuer.")
        expected_id = key_id(origin, public).hex()
        if _field(sig, "key_id", str, "signature.") != expected_id:
            raise _Fail(f"signed by key id {sig.get('key_id')!r}, not the pinned key ({expected_id})")
        if _field(issuer, "key_id", str, "issuer.") != expected_id:
            raise _Fail("the issuer's key id does not name the pinned key")
        if _field(issuer, "public_key_sha256", str, "issuer.") != hashlib.sha256(public).hexdigest():
            raise _Fail("the issuer's key fingerprint does not name the pinned key")
        value = _b64(_field(sig, "value", str, "signature."), "signature.value")
        if not verify_ed25519(public, signed_bytes(doc), value):
            raise _Fail("the Ed25519 signature does not verify under the pinned public key")
        return f"Ed25519, key id {expected_id}"

    def checkpoint(self) -> str:
        public = self.pinned_key()
        note = _field(_field(self.doc, "checkpoint", dict), "note", str, "checkpoint.")
        origin = _field(_field(self.doc, "issuer", dict), "origin", str, "issuer.")
        try:
            cp = parse_and_verify(note, origin, public, origin=origin)
        except ValueError as exc:
            raise _Fail(f"the checkpoint does not verify: {exc}") from exc
        return f"tree size {cp.size}, signed by {origin}"

    # steps ------------------------------------------------------------------------------

    def inclusion(self, i: int) -> str:
        step = _steps(self.doc)[i]
        cp = _note_checkpoint(_field(self.doc, "checkpoint", dict).get("note"))
        event = _b64(_field(step, "event", str), "the event")
        index = _field(step, "leaf_index", int)
        proof = [_b64(p, "a proof hash") for p in _field(step, "inclusion_proof", list)]
        if not verify_inclusion(leaf_hash(event), index, cp.size, proof, cp.root):
            raise _Fail(f"the event is not leaf {index} of the checkpoint's tree (size {cp.size})")
        return f"leaf {index} of {cp.size}"

    def event(self, i: int) -> str:
        doc = self.doc
        step = _steps(doc)[i]
        name = _field(step, "name", str)
        request = _field(doc, "request", dict)
        raw = _b64(_field(step, "event", str), "the event")
        try:
            event = _parse_json(raw)
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            raise _Fail("the event is not JSON") from exc
        if not isinstance(event, dict) or canonical_json(event) != raw:
            raise _Fail("the event bytes are not a canonical JSON object")
        if event.get("seq") != _field(step, "leaf_index", int) + 1:
            raise _Fail("the event's seq is not its leaf index + 1")
        if event.get("tenant_id") != _field(doc, "tenant_id", str):
            raise _Fail("the event belongs to another tenant")
        if event.get("subject_ref") != _field(_field(doc, "subject", dict), "subject_ref", str):
            raise _Fail("the event concerns another subject ref")
        if event.get("occurred_at") != _field(step, "completed_at", str):
            raise _Fail(f"the event occurred at {event.get('occurred_at')}, not at the step's time")
        payload = event.get("payload")
        if not isinstance(payload, dict):
            raise _Fail("the event has no payload")
        evidence = _field(step, "evidence", dict)
        if name == CORE_STEP_ORDER[0]:
            if event.get("type") != RECEIVED_EVENT:
                raise _Fail(f"the event is a {event.get('type')!r}, not {RECEIVED_EVENT}")
            claimed = {
                "request_id": request.get("id"),
                "legal_basis": request.get("legal_basis"),
                "reference": request.get("reference"),
                "requested_by": request.get("requested_by"),
                "due_at": request.get("due_at"),
            }
            for key, value in claimed.items():
                if payload.get(key) != value:
                    raise _Fail(f"the logged request's {key} differs from the certificate's")
            for key, value in evidence.items():
                if payload.get(key) != value:
                    raise _Fail(f"the evidence's {key} differs from the logged request")
        else:
            if event.get("type") != STEP_EVENT:
                raise _Fail(f"the event is a {event.get('type')!r}, not {STEP_EVENT}")
            expected = {"request_id": request.get("id"), "step": name, "evidence": evidence}
            if payload != expected:
                diff = sorted(k for k in expected if payload.get(k) != expected[k])
                detail = ""
                if diff == ["evidence"] and isinstance(payload.get("evidence"), dict):
                    logged = payload["evidence"]
                    keys = sorted(k for k in set(logged) | set(evidence) if logged.get(k) != evidence.get(k))
                    detail = f" ({', '.join(keys)})"
                raise _Fail(f"the logged event differs from the certificate in: {', '.join(diff)}{detail}")
        return f"{event.get('type')} at seq {event.get('seq')}"

    def step_order(self) -> str:
        doc = self.doc
        steps = _steps(doc)
        names = [_field(s, "name", str) for s in steps]
        if len(set(names)) != len(names):
            raise _Fail("a step is listed twice")
        if tuple(names[: len(CORE_STEP_ORDER)]) != CORE_STEP_ORDER:
            raise _Fail(f"the steps must begin with {', '.join(CORE_STEP_ORDER)}; got {', '.join(names)}")
        indices = [_field(s, "leaf_index", int) for s in steps]
        if any(b <= a for a, b in itertools.pairwise(indices)) or indices[0] < 0:
            raise _Fail("the steps' leaf indices are not increasing")
        times = [_time(s.get("completed_at"), f"steps[{i}].completed_at") for i, s in enumerate(steps)]
        for (a, b), name in zip(itertools.pairwise(times), names[1:], strict=True):
            if b < a:
                raise _Fail(f"step {name} completed before the step preceding it")
        request = _field(doc, "request", dict)
        received = _time(request.get("received_at"), "request.received_at")
        completed = _time(request.get("completed_at"), "request.completed_at")
        due = _time(request.get("due_at"), "request.due_at")
        issued = _time(doc.get("issued_at"), "issued_at")
        if received != times[0]:
            raise _Fail("the request's received time is not the received step's time")
        if completed != times[-1]:
            raise _Fail("the request's completion time is not the last step's time")
        if due < received:
            raise _Fail("the request is due before it was received")
        if issued < completed:
            raise _Fail("the certificate was issued before the erasure completed")
        return " -> ".join(names)

    def evidence(self) -> str:
        by_name: dict[str, dict[str, Any]] = {}
        for i, step in enumerate(_steps(self.doc)):
            evidence = _field(step, "evidence", dict)
            if not evidence:
                raise _Fail(f"step {_step_name(step, i)} carries no evidence")
            by_name[_step_name(step, i)] = evidence
        tomb = by_name.get("tombstoned", {})
        if tomb.get("index_entries_after") != 0:
            raise _Fail("tombstoned: search index entries remained after the tombstone")
        destroyed = by_name.get("key_destroyed", {})
        receipts = destroyed.get("receipts")
        if not isinstance(receipts, list) or destroyed.get("keys_destroyed") != len(receipts):
            raise _Fail("key_destroyed: the receipts do not match the number of keys destroyed")
        if any(not isinstance(r, dict) or r.get("key_unusable") is not True for r in receipts):
            raise _Fail("key_destroyed: a receipt does not show the key unusable")
        verified = by_name.get("verified", {})
        probes = verified.get("key_probes")
        if not isinstance(probes, list) or any(
            not isinstance(p, dict) or p.get("destroyed") is not True for p in probes
        ):
            raise _Fail("verified: a key probe does not show the key destroyed")
        for key in ("retrievable_memories", "projection_rows_with_ciphertext", "index_entries"):
            if verified.get(key) != 0:
                raise _Fail(f"verified: {key} is not 0")
        if verified.get("erasure_fence") is not True:
            raise _Fail("verified: the erasure fence is not up")
        return f"{len(receipts)} key(s) destroyed, {len(probes)} probe(s) show them gone"

    # what only the auditor knows ---------------------------------------------------------------

    def subject_commitment(self) -> str:
        assert self.subject_id is not None
        subject = _field(self.doc, "subject", dict)
        tenant = _field(self.doc, "tenant_id", str)
        salt = _field(subject, "salt", str, "subject.")
        try:
            computed = compute_subject_commitment(salt, tenant, self.subject_id)
        except ValueError as exc:
            raise _Fail("the commitment salt is not hex") from exc
        if computed != _field(subject, "commitment", str, "subject."):
            raise _Fail("the certificate is not about this subject id (commitment differs)")
        return "SHA-256(salt || tenant || subject id) matches"

    def tenant_check(self) -> str:
        tenant = _field(self.doc, "tenant_id", str)
        if tenant != self.tenant:
            raise _Fail(f"the certificate is for tenant {tenant!r}, not {self.tenant!r}")
        return tenant

    def older_checkpoint(self) -> str:
        public = self.pinned_key()
        origin = _field(_field(self.doc, "issuer", dict), "origin", str, "issuer.")
        older_note = _older_note(self.older)
        try:
            older = parse_and_verify(older_note, origin, public, origin=origin)
        except ValueError as exc:
            raise _Fail(f"the older checkpoint does not verify under the pinned key: {exc}") from exc
        note = _field(_field(self.doc, "checkpoint", dict), "note", str, "checkpoint.")
        try:
            current = parse_and_verify(note, origin, public, origin=origin)
        except ValueError as exc:
            raise _Fail("the certificate's own checkpoint does not verify") from exc
        m, n = older.size, current.size
        if m == n:
            if older.root != current.root:
                raise _Fail(f"two different trees signed at size {m}: the log forked")
            return f"same tree head as the older checkpoint (size {m})"
        if m < n:
            proof = self._embedded_proof(m)
            if proof is None:
                proof = self._given_proof(m, n)
            if not verify_consistency(m, n, older.root, current.root, proof):
                raise _Fail(f"the tree of size {n} does not extend the older checkpoint of size {m}")
            return f"size {n} extends the older checkpoint of size {m}"
        proof = self._given_proof(n, m)
        if not verify_consistency(n, m, current.root, older.root, proof):
            raise _Fail(f"the given checkpoint of size {m} does not extend the certificate's (size {n})")
        return f"the given checkpoint (size {m}) extends the certificate's (size {n})"

    def _embedded_proof(self, size: int) -> list[bytes] | None:
        for entry in _field(self.doc, "consistency_proofs", list):
            if isinstance(entry, dict) and entry.get("tree_size") == size:
                return [_b64(p, "a consistency proof hash") for p in _field(entry, "proof", list)]
        return None

    def _given_proof(self, first: int, second: int) -> list[bytes]:
        given = self.consistency_proof
        if given is None:
            raise _Fail(
                f"no consistency proof from size {first} to {second}: the certificate embeds proofs "
                "only from earlier stored checkpoints; fetch one from /v1/audit/proofs/consistency "
                "and pass it with --consistency-proof"
            )
        if isinstance(given, bytes | str):
            given = json.loads(given)
        if _field(given, "first", int) != first or _field(given, "second", int) != second:
            raise _Fail(f"the consistency proof given is not from size {first} to {second}")
        return [_b64(p, "a consistency proof hash") for p in _field(given, "proof", list)]


def _older_note(older: str | bytes | None) -> str:
    """A signed note, from note text or from another certificate holding one."""
    if isinstance(older, bytes):
        try:
            older = older.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _Fail("the older checkpoint is not UTF-8 text") from exc
    if not isinstance(older, str):
        raise _Fail("no older checkpoint given")
    if older.lstrip().startswith("{"):
        other = _parse_json(older.encode("utf-8"))
        return _field(_field(other, "checkpoint", dict), "note", str, "checkpoint.")
    return older


def verify_certificate(
    doc_bytes: bytes,
    public_key_pem: bytes,
    subject_id: str | None = None,
    tenant: str | None = None,
    older_checkpoint: str | bytes | None = None,
    consistency_proof: Any = None,
) -> VerificationResult:
    """Check a certificate offline; see the module docstring for each named check.

    ``older_checkpoint`` is a signed checkpoint note (or another certificate, whose
    checkpoint is used). ``consistency_proof`` is the JSON ``{first, second, proof}``
    served by ``/v1/audit/proofs/consistency``, needed only when the older checkpoint's
    size is not among those the certificate embeds proofs from.
    """
    v = _Verifier(doc_bytes, public_key_pem, subject_id, tenant, older_checkpoint, consistency_proof)
    if not v.run("parse", v.parse):
        return VerificationResult(tuple(v.checks))
    v.run("canonical_form", v.canonical_form)
    v.run("format", v.format)
    v.run("signature", v.signature)
    v.run("checkpoint_signature", v.checkpoint)
    steps = v.doc.get("steps")
    if isinstance(steps, list) and steps:
        for i, step in enumerate(steps):
            name = _step_name(step, i)
            v.run(f"inclusion:{name}", lambda i=i: v.inclusion(i))
            v.run(f"event:{name}", lambda i=i: v.event(i))
    v.run("step_order", v.step_order)
    v.run("evidence", v.evidence)
    if tenant is not None:
        v.run("tenant", v.tenant_check)
    if subject_id is not None:
        v.run("subject_commitment", v.subject_commitment)
    if older_checkpoint is not None:
        v.run("older_checkpoint", v.older_checkpoint)
    report_id = v.doc.get("report_id")
    return VerificationResult(tuple(v.checks), report_id if isinstance(report_id, str) else None)
