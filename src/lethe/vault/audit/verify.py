"""Offline verification of an erasure certificate: no database, no server, no network.

An auditor holds three things: the certificate (canonical JSON), the issuer's public
key (pinned out of band, e.g. from ``lethe audit public-key``) and optionally the
subject id with the request's verification code, and an older checkpoint they kept.
``verify_certificate`` checks, as named checks, each reported separately:

- ``parse``: UTF-8 JSON object, no duplicate member names;
- ``canonical_form``: the bytes are exactly the RFC 8785 form of what they parse to;
- ``format``: a known format version (v3, or v2 or v1 issued before it), and the
  required fields with the right types (v3 adds ``result`` and ``missing``);
- ``signature``: Ed25519 over ``SIGNATURE_DOMAIN || canonical(document minus
  "signature")`` by the pinned key; the key id and fingerprint name that key. The
  domain prefix means no other Lethe signature (a checkpoint note) can pass as one;
- ``checkpoint_signature``: the embedded C2SP checkpoint is signed by the same key for
  the issuer's origin;
- ``inclusion:<step>``: the step's audit event (its canonical bytes) is the leaf at
  its index in the checkpoint's tree (RFC 9162 inclusion proof);
- ``event:<step>``: that event says what the certificate says: type, request id,
  tenant, subject reference (one for every event: v3's per-request
  ``request_subject_ref``, else ``subject_ref``), step name, evidence, time, and
  ``seq == leaf index + 1``;
- ``step_order``: the core steps, in order, first; leaf indices increasing; times
  non-decreasing and agreeing with the request's received/completed times;
- ``evidence``: every step carries evidence, and the evidence supports the claim (keys
  unusable, probes show them destroyed, nothing retrievable, no index entries; a probe
  said ``refused`` only for a generation whose refusal the ``key_destroyed`` step logged);
- ``result`` (v3 only): the stated result class is the one the evidence supports
  (``certificate_format.result_of``): ``erased`` needs at least one key generation and
  every generation confirmed destroyed by its probe or a ``key_irrecoverable`` receipt;
  ``nothing_held`` needs no memory forgotten and no key generation at all; ``partial``
  names in ``missing`` exactly the parts the evidence shows not done (and the other
  classes name none); a part said ``final`` is one whose destruction the KMS refused past
  Lethe's window (``refused`` in the ``key_destroyed`` evidence), and only such a part;
- ``residue`` (v3 only): the residue hunt's counts (``residue``), when identifiers were
  attached, agree with its ``residue_hunted`` step (``certificate_format.check_residue``);
- ``subject_commitment`` (with ``subject_id`` and, for v2, ``verification_code``): v2
  recomputes HMAC-SHA256 keyed by the code over tenant and subject id, and refuses to
  confirm any subject id without the code (the certificate holds no salt: a list of
  candidate ids tests nothing); v1 (and v2 for requests filed before codes) recomputes
  SHA-256(salt || tenant || subject_id);
- ``evidence`` also checks v2's ``key_destruction``: immediate or scheduled as the KMS
  receipts say, the copies as logged, and a window said closed only with a
  ``key_irrecoverable`` step showing the material destroyed;
- ``chain`` (a final certificate, or with ``previous``): the certificate names the first
  one by report id and SHA-256, as its logged ``reported`` and ``key_irrecoverable``
  steps do, and (with ``previous``) the first certificate given has that SHA-256;
- ``tenant`` (with ``tenant``): the certificate is for that tenant;
- ``older_checkpoint`` (with ``older_checkpoint``): the older checkpoint is signed by
  the pinned key, and the certificate's tree provably extends it (a consistency proof
  embedded in the certificate for that size, or one passed in ``consistency_proof``).

The step events are checked against the signed log head *and* against the certificate's
own claims, so a certificate re-signed by a dishonest holder of the key still fails
wherever its claims contradict the log it embeds.

Here: the checks of the document's form, signatures, events, order and subject; the
evidence checks (``evidence``, ``result``, ``chain``) are in ``audit.verify_evidence``, the
older checkpoint's in ``audit.verify_checkpoint``, the answer's shape in ``audit.verify_result``.

Standalone: auditors get this module (with those three, ``certificate_format``,
``step_names``, ``checkpoint``, ``canonical``, ``merkle`` and ``errors`` of
``lethe.vault``, and ``lethe.keys.signing``)
as an offline verifier, so it must stay importable without the rest of Lethe: no
database, no web framework, no KMS client. Its imports are the standard library,
``cryptography`` (Ed25519, through ``keys/signing.py``), ``rfc8785`` (the canonical JSON
fallback in ``vault/canonical.py``, pure Python) and those pure helpers. A test
(``tests/unit/test_standalone_verifier.py``) imports it with everything else blocked.

Exceptions: none. Malformed input of any kind yields failed checks, never an
exception: a verifier must fail closed, not crash.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
from collections.abc import Callable
from typing import Any

from lethe.keys.signing import SigningKeyError, load_public_key_pem, verify_ed25519
from lethe.vault.audit.certificate_format import (
    FORMAT,
    FORMAT_V1,
    FORMAT_V3,
    FORMATS,
    KEYED_SCHEME,
    MAX_DOCUMENT_BYTES,
    RECEIVED_EVENT,
    RESULTS,
    SALTED_SCHEME,
    SIGNATURE_DOMAIN,
    STEP_EVENT,
    CheckFailed,
    b64_bytes,
    check_residue,
    compute_subject_commitment,
    events_subject_ref,
    field_of,
    fold_subject_id,
    json_object,
    keyed_subject_commitment,
    note_checkpoint,
    optional_str,
    signed_bytes,
    step_name,
    steps_of,
    strict_json,
    timestamp,
)
from lethe.vault.audit.checkpoint import key_id, parse_and_verify
from lethe.vault.audit.step_names import CORE_STEP_ORDER, Step
from lethe.vault.audit.verify_checkpoint import check_older_checkpoint
from lethe.vault.audit.verify_evidence import check_chain, check_evidence, check_result
from lethe.vault.audit.verify_result import Check, VerificationResult
from lethe.vault.canonical import canonical_json
from lethe.vault.merkle import leaf_hash, verify_inclusion

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


# -- the checks -------------------------------------------------------------------------------


class _Verifier:
    def __init__(
        self,
        raw: bytes,
        public_key_pem: bytes,
        subject_id: str | None,
        verification_code: str | None,
        tenant: str | None,
        older_checkpoint: str | bytes | None,
        consistency_proof: Any,
        previous: bytes | None = None,
    ) -> None:
        self.previous = previous
        self.raw = raw
        self.public_key_pem = public_key_pem
        self.subject_id = subject_id
        self.verification_code = verification_code
        self.tenant = tenant
        self.older = older_checkpoint
        self.consistency_proof = consistency_proof
        self.checks: list[Check] = []
        self.doc: dict[str, Any] = {}

    def run(self, name: str, fn: Callable[[], str | None]) -> bool:
        try:
            detail = fn() or "ok"
        except CheckFailed as exc:
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
            raise CheckFailed("the public key given is not an Ed25519 public key PEM") from exc

    # parse, form, format ------------------------------------------------------------------

    def parse(self) -> str:
        if not isinstance(self.raw, bytes | bytearray):
            raise CheckFailed("the certificate must be given as bytes")
        if len(self.raw) > MAX_DOCUMENT_BYTES:
            raise CheckFailed("the certificate is larger than 32 MiB")
        self.doc = json_object(bytes(self.raw), "certificate")
        return f"{len(self.raw)} bytes of JSON"

    def canonical_form(self) -> str:
        if canonical_json(self.doc) != bytes(self.raw):
            raise CheckFailed("the bytes are not the RFC 8785 canonical form of the document")
        return "RFC 8785"

    def format(self) -> str:
        doc = self.doc
        version = field_of(doc, "format", str)
        if version not in FORMATS:
            raise CheckFailed(f"unknown format {version!r}; expected one of {', '.join(FORMATS)}")
        for key in ("report_id", "issued_at", "tenant_id"):
            field_of(doc, key, str)
        if version == FORMAT_V3:
            if field_of(doc, "result", str) not in RESULTS:
                raise CheckFailed(f"unknown result {doc['result']!r}; expected one of {', '.join(RESULTS)}")
            field_of(doc, "missing", list)
        issuer = field_of(doc, "issuer", dict)
        for key in ("origin", "key_id", "public_key_sha256"):
            field_of(issuer, key, str, "issuer.")
        request = field_of(doc, "request", dict)
        for key in ("id", "legal_basis", "requested_by", "received_at", "completed_at", "due_at"):
            field_of(request, key, str, "request.")
        optional_str(request, "reference", "request.")
        subject = field_of(doc, "subject", dict)
        field_of(subject, "commitment", str, "subject.")
        events_subject_ref(doc)
        if self.commitment_scheme() == SALTED_SCHEME:
            field_of(subject, "salt", str, "subject.")
        elif "salt" in subject:
            raise CheckFailed("a commitment keyed by the verification code carries no salt")
        for i, step in enumerate(steps_of(doc)):
            where = f"steps[{i}]."
            field_of(step, "name", str, where)
            field_of(step, "completed_at", str, where)
            field_of(step, "evidence", dict, where)
            field_of(step, "leaf_index", int, where)
            field_of(step, "event", str, where)
            field_of(step, "inclusion_proof", list, where)
        field_of(doc, "what_remains", list)
        field_of(doc, "backup_coverage", dict)
        field_of(field_of(doc, "checkpoint", dict), "note", str, "checkpoint.")
        field_of(doc, "consistency_proofs", list)
        sig = field_of(doc, "signature", dict)
        for key in ("algorithm", "key_id", "value"):
            field_of(sig, key, str, "signature.")
        return version

    def commitment_scheme(self) -> str:
        """v1 certificates are salted; v2 names its scheme."""
        if self.doc.get("format") == FORMAT_V1:
            return SALTED_SCHEME
        scheme = field_of(field_of(self.doc, "subject", dict), "commitment_scheme", str, "subject.")
        if scheme not in (KEYED_SCHEME, SALTED_SCHEME):
            raise CheckFailed(f"unknown subject commitment scheme {scheme!r}")
        return scheme

    # signatures ------------------------------------------------------------------------

    def signature(self) -> str:
        doc = self.doc
        public = self.pinned_key()
        sig = field_of(doc, "signature", dict)
        if field_of(sig, "algorithm", str) != "Ed25519":
            raise CheckFailed("the signature algorithm is not Ed25519")
        issuer = field_of(doc, "issuer", dict)
        origin = field_of(issuer, "origin", str, "issuer.")
        expected_id = key_id(origin, public).hex()
        if field_of(sig, "key_id", str, "signature.") != expected_id:
            raise CheckFailed(f"signed by key id {sig.get('key_id')!r}, not the pinned key ({expected_id})")
        if field_of(issuer, "key_id", str, "issuer.") != expected_id:
            raise CheckFailed("the issuer's key id does not name the pinned key")
        if field_of(issuer, "public_key_sha256", str, "issuer.") != hashlib.sha256(public).hexdigest():
            raise CheckFailed("the issuer's key fingerprint does not name the pinned key")
        value = b64_bytes(field_of(sig, "value", str, "signature."), "signature.value")
        if not verify_ed25519(public, signed_bytes(doc), value):
            raise CheckFailed("the Ed25519 signature does not verify under the pinned public key")
        return f"Ed25519, key id {expected_id}"

    def checkpoint(self) -> str:
        public = self.pinned_key()
        note = field_of(field_of(self.doc, "checkpoint", dict), "note", str, "checkpoint.")
        origin = field_of(field_of(self.doc, "issuer", dict), "origin", str, "issuer.")
        try:
            cp = parse_and_verify(note, origin, public, origin=origin)
        except ValueError as exc:
            raise CheckFailed(f"the checkpoint does not verify: {exc}") from exc
        return f"tree size {cp.size}, signed by {origin}"

    # steps ------------------------------------------------------------------------------

    def inclusion(self, i: int) -> str:
        step = steps_of(self.doc)[i]
        cp = note_checkpoint(field_of(self.doc, "checkpoint", dict).get("note"))
        event = b64_bytes(field_of(step, "event", str), "the event")
        index = field_of(step, "leaf_index", int)
        proof = [b64_bytes(p, "a proof hash") for p in field_of(step, "inclusion_proof", list)]
        if not verify_inclusion(leaf_hash(event), index, cp.size, proof, cp.root):
            raise CheckFailed(f"the event is not leaf {index} of the checkpoint's tree (size {cp.size})")
        return f"leaf {index} of {cp.size}"

    def event(self, i: int) -> str:
        doc = self.doc
        step = steps_of(doc)[i]
        name = field_of(step, "name", str)
        request = field_of(doc, "request", dict)
        raw = b64_bytes(field_of(step, "event", str), "the event")
        try:
            event = strict_json(raw)
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            raise CheckFailed("the event is not JSON") from exc
        if not isinstance(event, dict) or canonical_json(event) != raw:
            raise CheckFailed("the event bytes are not a canonical JSON object")
        if event.get("seq") != field_of(step, "leaf_index", int) + 1:
            raise CheckFailed("the event's seq is not its leaf index + 1")
        if event.get("tenant_id") != field_of(doc, "tenant_id", str):
            raise CheckFailed("the event belongs to another tenant")
        if event.get("subject_ref") != events_subject_ref(doc):
            raise CheckFailed("the event concerns another subject ref")
        if event.get("occurred_at") != field_of(step, "completed_at", str):
            raise CheckFailed(f"the event occurred at {event.get('occurred_at')}, not at the step's time")
        payload = event.get("payload")
        if not isinstance(payload, dict):
            raise CheckFailed("the event has no payload")
        evidence = field_of(step, "evidence", dict)
        if name == CORE_STEP_ORDER[0]:
            if event.get("type") != RECEIVED_EVENT:
                raise CheckFailed(f"the event is a {event.get('type')!r}, not {RECEIVED_EVENT}")
            claimed = {
                "request_id": request.get("id"),
                "legal_basis": request.get("legal_basis"),
                "reference": request.get("reference"),
                "requested_by": request.get("requested_by"),
                "due_at": request.get("due_at"),
            }
            if self.commitment_scheme() == KEYED_SCHEME:
                claimed["subject_commitment"] = field_of(doc, "subject", dict).get("commitment")
            for key, value in claimed.items():
                if payload.get(key) != value:
                    raise CheckFailed(f"the logged request's {key} differs from the certificate's")
            for key, value in evidence.items():
                if payload.get(key) != value:
                    raise CheckFailed(f"the evidence's {key} differs from the logged request")
        else:
            if event.get("type") != STEP_EVENT:
                raise CheckFailed(f"the event is a {event.get('type')!r}, not {STEP_EVENT}")
            expected = {"request_id": request.get("id"), "step": name, "evidence": evidence}
            if payload != expected:
                diff = sorted(k for k in expected if payload.get(k) != expected[k])
                detail = ""
                if diff == ["evidence"] and isinstance(payload.get("evidence"), dict):
                    logged = payload["evidence"]
                    keys = sorted(k for k in set(logged) | set(evidence) if logged.get(k) != evidence.get(k))
                    detail = f" ({', '.join(keys)})"
                raise CheckFailed(
                    f"the logged event differs from the certificate in: {', '.join(diff)}{detail}"
                )
        return f"{event.get('type')} at seq {event.get('seq')}"

    def step_order(self) -> str:
        doc = self.doc
        steps = steps_of(doc)
        names = [field_of(s, "name", str) for s in steps]
        if len(set(names)) != len(names):
            raise CheckFailed("a step is listed twice")
        if tuple(names[: len(CORE_STEP_ORDER)]) != CORE_STEP_ORDER:
            raise CheckFailed(
                f"the steps must begin with {', '.join(CORE_STEP_ORDER)}; got {', '.join(names)}"
            )
        indices = [field_of(s, "leaf_index", int) for s in steps]
        if any(b <= a for a, b in itertools.pairwise(indices)) or indices[0] < 0:
            raise CheckFailed("the steps' leaf indices are not increasing")
        times = [timestamp(s.get("completed_at"), f"steps[{i}].completed_at") for i, s in enumerate(steps)]
        for (a, b), name in zip(itertools.pairwise(times), names[1:], strict=True):
            if b < a:
                raise CheckFailed(f"step {name} completed before the step preceding it")
        request = field_of(doc, "request", dict)
        received = timestamp(request.get("received_at"), "request.received_at")
        completed = timestamp(request.get("completed_at"), "request.completed_at")
        due = timestamp(request.get("due_at"), "request.due_at")
        issued = timestamp(doc.get("issued_at"), "issued_at")
        if received != times[0]:
            raise CheckFailed("the request's received time is not the received step's time")
        if completed != times[-1]:
            raise CheckFailed("the request's completion time is not the last step's time")
        if due < received:
            raise CheckFailed("the request is due before it was received")
        if issued < completed:
            raise CheckFailed("the certificate was issued before the erasure completed")
        return " -> ".join(names)

    def evidence(self) -> str:
        return check_evidence(self.doc)

    def result(self) -> str:
        return check_result(self.doc)

    def chain(self) -> str:
        return check_chain(self.doc, self.previous)

    def subject_commitment(self) -> str:
        subject = field_of(self.doc, "subject", dict)
        tenant = field_of(self.doc, "tenant_id", str)
        claimed = field_of(subject, "commitment", str, "subject.")
        if self.subject_id is None:
            raise CheckFailed("a verification code confirms nothing without the subject id it is for")
        if self.commitment_scheme() == KEYED_SCHEME:
            if self.verification_code is None:
                raise CheckFailed(
                    "this certificate confirms a subject id only together with the verification "
                    "code given when the request was filed; without it no id can be confirmed"
                )
            try:  # the id as Lethe folds it, or as typed (requests filed before ids were folded)
                keyed = {
                    keyed_subject_commitment(self.verification_code, tenant, spelling)
                    for spelling in (fold_subject_id(self.subject_id), self.subject_id)
                }
            except ValueError as exc:
                raise CheckFailed(f"the verification code is malformed: {exc}") from exc
            if claimed not in keyed:
                raise CheckFailed(
                    "the certificate is not about this subject id, or the verification code is "
                    "not this request's (commitment differs)"
                )
            return "HMAC-SHA256(verification code; tenant || subject id) matches"
        salt = field_of(subject, "salt", str, "subject.")
        try:
            computed = compute_subject_commitment(salt, tenant, self.subject_id)
        except ValueError as exc:
            raise CheckFailed("the commitment salt is not hex") from exc
        if computed != claimed:
            raise CheckFailed("the certificate is not about this subject id (commitment differs)")
        return "SHA-256(salt || tenant || subject id) matches"

    def tenant_check(self) -> str:
        tenant = field_of(self.doc, "tenant_id", str)
        if tenant != self.tenant:
            raise CheckFailed(f"the certificate is for tenant {tenant!r}, not {self.tenant!r}")
        return tenant

    def older_checkpoint(self) -> str:
        return check_older_checkpoint(self.doc, self.pinned_key(), self.older, self.consistency_proof)


def verify_certificate(
    doc_bytes: bytes,
    public_key_pem: bytes,
    subject_id: str | None = None,
    tenant: str | None = None,
    older_checkpoint: str | bytes | None = None,
    consistency_proof: Any = None,
    verification_code: str | None = None,
    previous: bytes | None = None,
) -> VerificationResult:
    """Check a certificate offline; see the module docstring for each named check.

    ``previous`` is the first certificate a final one follows (checked by its SHA-256).
    ``subject_id`` with ``verification_code`` (the code handed out once when the request
    was filed) confirms whom a v2 certificate is about; a subject id alone confirms
    nothing for v2 (the check fails), as the commitment is keyed by the code.

    ``older_checkpoint`` is a signed checkpoint note (or another certificate, whose
    checkpoint is used). ``consistency_proof`` is the JSON ``{first, second, proof}``
    served by ``/v1/audit/proofs/consistency``, needed only when the older checkpoint's
    size is not among those the certificate embeds proofs from.
    """
    v = _Verifier(
        doc_bytes,
        public_key_pem,
        subject_id,
        verification_code,
        tenant,
        older_checkpoint,
        consistency_proof,
        previous,
    )
    if not v.run("parse", v.parse):
        return VerificationResult(tuple(v.checks))
    v.run("canonical_form", v.canonical_form)
    v.run("format", v.format)
    v.run("signature", v.signature)
    v.run("checkpoint_signature", v.checkpoint)
    steps = v.doc.get("steps")
    if isinstance(steps, list) and steps:
        for i, step in enumerate(steps):
            name = step_name(step, i)
            v.run(f"inclusion:{name}", functools.partial(v.inclusion, i))
            v.run(f"event:{name}", functools.partial(v.event, i))
    v.run("step_order", v.step_order)
    v.run("evidence", v.evidence)
    if v.doc.get("format") == FORMAT_V3:
        v.run("result", v.result)
        names = [s.get("name") for s in steps if isinstance(s, dict)] if isinstance(steps, list) else []
        if "residue" in v.doc or Step.RESIDUE_HUNTED in names:
            v.run("residue", lambda: check_residue(v.doc, steps_of(v.doc)))
    if "supersedes" in v.doc or previous is not None:
        v.run("chain", v.chain)
    if tenant is not None:
        v.run("tenant", v.tenant_check)
    if subject_id is not None or verification_code is not None:
        v.run("subject_commitment", v.subject_commitment)
    if older_checkpoint is not None:
        v.run("older_checkpoint", v.older_checkpoint)
    report_id = v.doc.get("report_id")
    return VerificationResult(tuple(v.checks), report_id if isinstance(report_id, str) else None)
