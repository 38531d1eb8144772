"""The subject access export's format (GDPR Art. 15 / 20), as its issuer and its verifier read it.

An export is one RFC 8785 canonical JSON object ``{manifest, items, signature}``:
``items`` is every readable memory of the subject; ``manifest`` says for whom, by whom,
when and what (counts per status, kind and agent, the SHA-256 of the canonical
``items``, the issuer's key). The Ed25519 signature covers ``SIGNATURE_DOMAIN``
followed by the canonical document without its ``signature`` member: the domain is
not the certificate's, so neither can pass for the other.

Part of the standalone verifier (stdlib, ``vault.canonical``): ``tally`` and
``body_sha256`` are the one definition of the counts and the digest, for the issuer
that writes them and the verifier that recomputes them.

Exceptions: none (``CanonicalJsonError`` from ``vault.canonical`` for values that have
no canonical form; the issuer only passes plain JSON values).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from typing import Any

from lethe.vault.canonical import canonical_json

FORMAT = "lethe-subject-access-export/v1"
SIGNATURE_DOMAIN = b"lethe-subject-access-export/v1\n"
STATUSES = ("active", "quarantined", "superseded", "expired", "forgotten")
MAX_EXPORT_BYTES = 256 * 1024 * 1024


def signed_bytes(document: dict[str, Any]) -> bytes:
    """What the export's signature covers: the domain and the document minus ``signature``."""
    return SIGNATURE_DOMAIN + canonical_json({k: v for k, v in document.items() if k != "signature"})


def body_sha256(items: list[Any]) -> str:
    """Hex SHA-256 of the canonical ``items`` array (the body the manifest describes)."""
    return hashlib.sha256(canonical_json(items)).hexdigest()


def tally(items: list[dict[str, Any]], forgotten: int, retracted: int = 0) -> dict[str, Any]:
    """The manifest's counts: exported items per status, kind and agent, plus forgotten ones.

    Forgotten memories are never exported (their keys are destroyed); they appear only as
    ``by_status.forgotten`` and ``forgotten``.
    """
    by_status = {s: 0 for s in STATUSES}
    by_status.update(Counter(str(i.get("status")) for i in items))
    by_status["forgotten"] = forgotten
    if retracted:  # removed as wrong or poisoned: counted like forgotten ones, never exported
        by_status["retracted"] = retracted
    return {
        "items": len(items),
        "forgotten": forgotten,
        "by_status": by_status,
        "by_kind": dict(sorted(Counter(str(i.get("kind")) for i in items).items())),
        "by_agent": dict(sorted(Counter(str(i.get("agent_id")) for i in items).items())),
    }
