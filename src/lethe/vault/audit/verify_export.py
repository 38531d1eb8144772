"""Offline verification of a subject access export: no database, no server, no network.

Whoever holds an export (the data subject, their lawyer, a supervisory authority) and the
issuer's public key (pinned out of band, e.g. ``lethe audit public-key``) can check that
the export is exactly what Lethe signed. ``verify_export`` runs named checks:

- ``parse``: UTF-8 JSON object, no duplicate member names;
- ``canonical_form``: the bytes are the RFC 8785 form of what they parse to, so no
  byte can change without failing here or below;
- ``format``: ``manifest.format`` is known and the fields have the right types;
- ``signature``: Ed25519 over ``SIGNATURE_DOMAIN || canonical(document minus
  "signature")`` by the pinned key, whose key id and fingerprint the manifest names;
- ``body_digest``: ``manifest.body_sha256`` is the SHA-256 of the canonical ``items``;
- ``counts``: the manifest's counts per status, kind and agent are those of the items;
- ``tenant`` (with ``tenant``): the export is of that tenant's records.

Standalone like ``vault.audit.verify`` (whose ``Check`` and ``VerificationResult`` it
shares): the standard library, ``cryptography`` (through ``keys.signing``), ``rfc8785``
(through ``vault.canonical``) and the pure format helpers; a test imports it with
everything else blocked.

Exceptions: none. Malformed input yields failed checks, never an exception.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

from lethe.keys.signing import SigningKeyError, load_public_key_pem, verify_ed25519
from lethe.vault.audit.certificate_format import CheckFailed, b64_bytes, field_of, json_object
from lethe.vault.audit.checkpoint import key_id
from lethe.vault.audit.export_format import FORMAT, MAX_EXPORT_BYTES, body_sha256, signed_bytes, tally
from lethe.vault.audit.verify import Check, VerificationResult
from lethe.vault.canonical import canonical_json

__all__ = ["verify_export"]


def verify_export(raw: bytes, public_key_pem: bytes, tenant: str | None = None) -> VerificationResult:
    """Every check of the export ``raw`` (its bytes as received) under the pinned public key."""
    checks: list[Check] = []
    state: dict[str, Any] = {}

    def run(name: str, fn: Callable[[], str]) -> bool:
        try:
            detail = fn()
        except CheckFailed as exc:
            checks.append(Check(name, False, str(exc)))
            return False
        except Exception as exc:  # fail closed on anything malformed
            checks.append(Check(name, False, f"malformed export ({type(exc).__name__}: {exc})"))
            return False
        checks.append(Check(name, True, detail))
        return True

    def parse() -> str:
        if not isinstance(raw, bytes | bytearray):
            raise CheckFailed("the export must be given as bytes")
        if len(raw) > MAX_EXPORT_BYTES:
            raise CheckFailed("the export is larger than 256 MiB")
        state["doc"] = json_object(bytes(raw), "export")
        return f"{len(raw)} bytes of JSON"

    if run("parse", parse):
        doc = state["doc"]
        run("canonical_form", lambda: _canonical(raw, doc))
        if run("format", lambda: _format(doc)):
            run("signature", lambda: _signature(doc, public_key_pem))
            run("body_digest", lambda: _digest(doc))
            run("counts", lambda: _counts(doc))
            if tenant is not None:
                run("tenant", lambda: _tenant(doc, tenant))
    manifest = state.get("doc", {}).get("manifest") if isinstance(state.get("doc"), dict) else None
    export_id = manifest.get("export_id") if isinstance(manifest, dict) else None
    return VerificationResult(tuple(checks), export_id if isinstance(export_id, str) else None)


def _canonical(raw: bytes, doc: dict[str, Any]) -> str:
    if canonical_json(doc) != bytes(raw):
        raise CheckFailed("the bytes are not the RFC 8785 canonical form of the document")
    return "RFC 8785"


def _format(doc: dict[str, Any]) -> str:
    if set(doc) != {"manifest", "items", "signature"}:
        raise CheckFailed("the export must hold exactly manifest, items and signature")
    manifest = field_of(doc, "manifest", dict)
    if field_of(manifest, "format", str, "manifest.") != FORMAT:
        raise CheckFailed(f"unknown format {manifest.get('format')!r}; expected {FORMAT}")
    for key in ("export_id", "tenant_id", "generated_at", "requested_by", "body_sha256", "signing_key_id"):
        field_of(manifest, key, str, "manifest.")
    issuer = field_of(manifest, "issuer", dict, "manifest.")
    for key in ("origin", "key_id", "public_key_sha256"):
        field_of(issuer, key, str, "manifest.issuer.")
    counts = field_of(manifest, "counts", dict, "manifest.")
    for key in ("by_status", "by_kind", "by_agent"):
        field_of(counts, key, dict, "manifest.counts.")
    field_of(counts, "forgotten", int, "manifest.counts.")
    for i, item in enumerate(field_of(doc, "items", list)):
        if not isinstance(item, dict):
            raise CheckFailed(f"items[{i}] is not an object")
        field_of(item, "id", str, f"items[{i}].")
    sig = field_of(doc, "signature", dict)
    for key in ("algorithm", "key_id", "value"):
        field_of(sig, key, str, "signature.")
    return FORMAT


def _signature(doc: dict[str, Any], public_key_pem: bytes) -> str:
    try:
        public = load_public_key_pem(public_key_pem)
    except SigningKeyError as exc:
        raise CheckFailed("the public key given is not an Ed25519 public key PEM") from exc
    manifest, sig = doc["manifest"], doc["signature"]
    issuer = manifest["issuer"]
    expected = key_id(issuer["origin"], public).hex()
    if sig["algorithm"] != "Ed25519":
        raise CheckFailed("the signature algorithm is not Ed25519")
    if {sig["key_id"], issuer["key_id"], manifest["signing_key_id"]} != {expected}:
        raise CheckFailed(f"signed by key id {sig['key_id']!r}, not the pinned key ({expected})")
    if issuer["public_key_sha256"] != hashlib.sha256(public).hexdigest():
        raise CheckFailed("the issuer's key fingerprint does not name the pinned key")
    if not verify_ed25519(public, signed_bytes(doc), b64_bytes(sig["value"], "signature.value")):
        raise CheckFailed("the Ed25519 signature does not verify under the pinned public key")
    return f"Ed25519, key id {expected}"


def _digest(doc: dict[str, Any]) -> str:
    if body_sha256(doc["items"]) != doc["manifest"]["body_sha256"]:
        raise CheckFailed("manifest.body_sha256 is not the SHA-256 of the items")
    return f"{len(doc['items'])} items, SHA-256 {doc['manifest']['body_sha256'][:16]}..."


def _counts(doc: dict[str, Any]) -> str:
    counts = doc["manifest"]["counts"]
    expected = tally(doc["items"], counts["forgotten"])
    wrong = sorted(k for k, v in expected.items() if counts.get(k) != v)
    if wrong:
        raise CheckFailed(f"the manifest's counts disagree with the items: {', '.join(wrong)}")
    return f"{expected['items']} items, {expected['forgotten']} forgotten"


def _tenant(doc: dict[str, Any], tenant: str) -> str:
    if doc["manifest"]["tenant_id"] != tenant:
        raise CheckFailed("the export is of another tenant")
    return tenant
