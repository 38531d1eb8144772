"""The verifier's ``older_checkpoint`` check: the certificate's tree provably extends an
older checkpoint the auditor kept (or the other way round), by a consistency proof embedded
in the certificate or given.

Part of the standalone verifier (``vault.audit.verify``): standard library and the
verifier's pure helpers only.

Exceptions: ``CheckFailed``, one failed check (the verifier records it, never lets it out).
"""

from __future__ import annotations

import json
from typing import Any

from lethe.vault.audit.certificate_format import CheckFailed, b64_bytes, field_of, older_note_of
from lethe.vault.audit.checkpoint import parse_and_verify
from lethe.vault.merkle import verify_consistency


def check_older_checkpoint(
    doc: dict[str, Any], public: bytes, older_checkpoint: str | bytes | None, consistency_proof: Any
) -> str:
    origin = field_of(field_of(doc, "issuer", dict), "origin", str, "issuer.")
    older_note = older_note_of(older_checkpoint)
    try:
        older = parse_and_verify(older_note, origin, public, origin=origin)
    except ValueError as exc:
        raise CheckFailed(f"the older checkpoint does not verify under the pinned key: {exc}") from exc
    note = field_of(field_of(doc, "checkpoint", dict), "note", str, "checkpoint.")
    try:
        current = parse_and_verify(note, origin, public, origin=origin)
    except ValueError as exc:
        raise CheckFailed("the certificate's own checkpoint does not verify") from exc
    m, n = older.size, current.size
    if m == n:
        if older.root != current.root:
            raise CheckFailed(f"two different trees signed at size {m}: the log forked")
        return f"same tree head as the older checkpoint (size {m})"
    if m < n:
        proof = _embedded_proof(doc, m)
        if proof is None:
            proof = _given_proof(consistency_proof, m, n)
        if not verify_consistency(m, n, older.root, current.root, proof):
            raise CheckFailed(f"the tree of size {n} does not extend the older checkpoint of size {m}")
        return f"size {n} extends the older checkpoint of size {m}"
    proof = _given_proof(consistency_proof, n, m)
    if not verify_consistency(n, m, current.root, older.root, proof):
        raise CheckFailed(f"the given checkpoint of size {m} does not extend the certificate's (size {n})")
    return f"the given checkpoint (size {m}) extends the certificate's (size {n})"


def _embedded_proof(doc: dict[str, Any], size: int) -> list[bytes] | None:
    for entry in field_of(doc, "consistency_proofs", list):
        if isinstance(entry, dict) and entry.get("tree_size") == size:
            return [b64_bytes(p, "a consistency proof hash") for p in field_of(entry, "proof", list)]
    return None


def _given_proof(consistency_proof: Any, first: int, second: int) -> list[bytes]:
    given = consistency_proof
    if given is None:
        raise CheckFailed(
            f"no consistency proof from size {first} to {second}: the certificate embeds proofs "
            "only from earlier stored checkpoints; fetch one from /v1/audit/proofs/consistency "
            "and pass it with --consistency-proof"
        )
    if isinstance(given, bytes | str):
        given = json.loads(given)
    if field_of(given, "first", int) != first or field_of(given, "second", int) != second:
        raise CheckFailed(f"the consistency proof given is not from size {first} to {second}")
    return [b64_bytes(p, "a consistency proof hash") for p in field_of(given, "proof", list)]
